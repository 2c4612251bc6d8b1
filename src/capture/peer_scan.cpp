#include "capture/peer_scan.hpp"

#include <cstring>
#include <set>

#include <fmt/format.h>

#include "common/hex.hpp"

namespace kerncap::capture {

std::vector<PeerReference> peer_references(std::span<const uint8_t> params, const std::vector<format::ParamSlot>& slots,
                                           const std::vector<format::Region>& regions, int launch_device) {
  std::vector<PeerReference> out;
  for (uint32_t i = 0; i < slots.size(); ++i) {
    const auto& s = slots[i];
    for (uint64_t off = s.offset; off + 8 <= uint64_t{s.offset} + s.size && off + 8 <= params.size(); off += 8) {
      uint64_t word = 0;
      std::memcpy(&word, params.data() + off, 8);
      for (const auto& r : regions) {
        if (r.device < 0 || r.device == launch_device) continue;
        if (word >= r.base && word - r.base < r.size) {
          out.push_back({i, r.id, r.device});
          break;
        }
      }
    }
  }
  return out;
}

std::string peer_summary(const std::vector<format::Region>& regions, int launch_device,
                         const std::vector<PeerReference>& refs) {
  std::set<int> devices;
  uint64_t bytes = 0;
  size_t n = 0;
  for (const auto& r : regions)
    if (r.device >= 0 && r.device != launch_device) {
      devices.insert(r.device);
      bytes += r.size;
      ++n;
    }
  if (!n) return "";
  std::string devs;
  for (int d : devices) devs += (devs.empty() ? "" : ", ") + std::to_string(d);
  std::string s = fmt::format("{} region(s) ({}) belong to other GPU(s) (device {}) than the launch's (device {})", n,
                              human_bytes(bytes), devs, launch_device);
  if (refs.empty()) return s + "; no parameter points into them directly (captured all the same)";
  std::string params;
  std::set<uint32_t> seen;
  for (const auto& r : refs)
    if (seen.insert(r.param).second) params += (params.empty() ? "" : ", ") + std::to_string(r.param);
  return s + fmt::format("; parameter(s) {} point into them: the kernel reads peer memory", params);
}

}  // namespace kerncap::capture
