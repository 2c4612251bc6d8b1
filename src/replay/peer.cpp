#include "replay/peer.hpp"

#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "names/collective.hpp"

namespace kerncap::replay {

void refuse_unreplayable(const format::Manifest& m) {
  if (names::is_nccl_kernel(m.mangled_name, m.demangled_name))
    input_error(fmt::format("kerncap does not replay {}: {}", m.demangled_name, names::nccl_capture_note()));
}

std::string peer_note(const format::Manifest& m, int replay_ordinal) {
  std::set<int> devices;
  uint64_t bytes = 0;
  size_t n = 0;
  for (const auto& r : m.regions) {
    if (r.device < 0 || r.device == m.device_ordinal) continue;
    devices.insert(r.device);
    bytes += r.size;
    ++n;
  }
  if (!n) return "";
  std::string list;
  for (int d : devices) list += (list.empty() ? "" : ", ") + std::to_string(d);
  return fmt::format("{} region(s) ({}) lived on other GPU(s) of the application (device {}; the kernel ran on "
                     "device {}): they are restored on device {} at their captured addresses, so the kernel reads "
                     "the same bytes, from local memory instead of over the peer link (times exclude peer "
                     "traffic)",
                     n, human_bytes(bytes), list, m.device_ordinal, replay_ordinal);
}

}  // namespace kerncap::replay
