#include "replay/state_reset.hpp"

#include <algorithm>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

std::vector<ResetRange> reset_ranges(const format::Manifest& m, const format::Footprint* footprint) {
  std::unordered_map<uint32_t, size_t> index;
  for (size_t i = 0; i < m.regions.size(); ++i) index.emplace(m.regions[i].id, i);
  std::vector<ResetRange> all;
  auto add = [&](size_t i, uint64_t off, uint64_t size) {
    const uint64_t region = m.regions[i].size;
    if (off >= region || size == 0) return;
    all.push_back({i, off, std::min(size, region - off)});
  };
  for (const auto& run : m.after) {
    auto it = index.find(run.region);
    if (it == index.end())
      input_error(fmt::format("the manifest's AFTER run at offset {} names region {}, which the capture does not have",
                              run.offset, run.region));
    add(it->second, run.offset, run.size);
  }
  if (footprint) {
    if (footprint->regions.size() != m.regions.size())
      input_error(fmt::format("the footprint describes {} regions but the capture has {}; measure it again with "
                              "`kerncap footprint --force`",
                              footprint->regions.size(), m.regions.size()));
    for (size_t i = 0; i < m.regions.size(); ++i) {
      const auto& r = footprint->regions[i];
      if (r.id != m.regions[i].id || r.size != m.regions[i].size)
        input_error(fmt::format("footprint region {} does not match capture region {} (id or size); measure it "
                                "again with `kerncap footprint --force`",
                                r.id, m.regions[i].id));
      const uint64_t g = r.written.granule();
      r.written.for_each_run([&](uint64_t first, uint64_t count) { add(i, first * g, count * g); });
    }
  }
  std::sort(all.begin(), all.end(),
            [](const ResetRange& a, const ResetRange& b) { return std::tie(a.index, a.offset) < std::tie(b.index, b.offset); });
  std::vector<ResetRange> out;
  for (const auto& r : all) {
    if (!out.empty() && out.back().index == r.index && r.offset <= out.back().offset + out.back().size) {
      out.back().size = std::max(out.back().offset + out.back().size, r.offset + r.size) - out.back().offset;
      continue;
    }
    out.push_back(r);
  }
  return out;
}

std::vector<ResetRange> read_parts(const std::vector<ResetRange>& ranges, const format::Manifest& m,
                                   const format::Footprint* footprint) {
  if (!footprint || footprint->regions.size() != m.regions.size()) return ranges;
  std::vector<ResetRange> out;
  for (const ResetRange& r : ranges) {
    const format::RegionFootprint& f = footprint->regions.at(r.index);
    if (f.probed || f.size != m.regions[r.index].size) {
      out.push_back(r);
      continue;
    }
    const uint64_t g = f.read.granule(), end = r.offset + r.size;
    f.read.for_each_run([&](uint64_t first, uint64_t count) {
      const uint64_t lo = std::max(first * g, r.offset), hi = std::min((first + count) * g, end);
      if (lo < hi) out.push_back({r.index, lo, hi - lo});
    });
  }
  return out;
}

std::vector<ResetCopy> plan_part_copies(const std::vector<ResetRange>& ranges, const std::vector<ResetRange>& parts,
                                        const std::vector<uint64_t>& addresses) {
  std::vector<ResetCopy> out;
  size_t k = 0;
  uint64_t staged = 0;  // staging offset of ranges[k]
  for (const ResetRange& p : parts) {
    while (k < ranges.size() && !(ranges[k].index == p.index && p.offset >= ranges[k].offset &&
                                  p.offset + p.size <= ranges[k].offset + ranges[k].size)) {
      staged += ranges[k].size;
      ++k;
    }
    if (k == ranges.size()) fail(ErrorKind::Internal, "a reset part lies in no reset range");
    const CUdeviceptr dst = addresses.at(p.index) + p.offset;
    const uint64_t src = staged + (p.offset - ranges[k].offset);
    if (!out.empty() && out.back().dst + out.back().size == dst && out.back().src_offset + out.back().size == src)
      out.back().size += p.size;
    else
      out.push_back({dst, src, p.size});
  }
  return out;
}

uint64_t total_bytes(const std::vector<ResetRange>& ranges) {
  uint64_t n = 0;
  for (const auto& r : ranges) n += r.size;
  return n;
}

StagingPlace choose_staging(uint64_t bytes, uint64_t free_bytes, uint64_t total) {
  const uint64_t margin = std::max<uint64_t>(256ull << 20, total / 20);
  return free_bytes > margin && bytes <= free_bytes - margin ? StagingPlace::Device : StagingPlace::Host;
}

std::string to_string(StagingPlace p) { return p == StagingPlace::Device ? "device" : "pinned host"; }

std::vector<ResetCopy> plan_copies(const std::vector<ResetRange>& ranges, const std::vector<uint64_t>& addresses) {
  std::vector<ResetCopy> out;
  uint64_t staged = 0;
  for (const auto& r : ranges) {
    const CUdeviceptr dst = addresses.at(r.index) + r.offset;
    if (!out.empty() && out.back().dst + out.back().size == dst && out.back().src_offset + out.back().size == staged)
      out.back().size += r.size;
    else
      out.push_back({dst, staged, r.size});
    staged += r.size;
  }
  return out;
}

StateReset::StateReset(Session& s) {
  const auto& cap = s.capture();
  std::optional<format::Footprint> fp;
  if (format::footprint_exists(cap.dir)) fp = format::read_footprint(cap.dir);
  const std::vector<ResetRange> ranges = reset_ranges(cap.manifest, fp ? &*fp : nullptr);
  std::vector<uint64_t> addresses(cap.manifest.regions.size());
  for (size_t i = 0; i < addresses.size(); ++i) addresses[i] = s.address(i);
  copies_ = plan_copies(ranges, addresses);
  ranges_ = ranges.size();
  bytes_ = total_bytes(ranges);
  const std::vector<ResetRange> parts = read_parts(ranges, cap.manifest, fp ? &*fp : nullptr);
  read_copies_ = plan_part_copies(ranges, parts, addresses);
  read_ranges_ = parts.size();
  read_bytes_ = total_bytes(parts);
  if (bytes_ == 0) return;
  size_t free_b = 0, total_b = 0;
  KC_CU(cuMemGetInfo(&free_b, &total_b));
  place_ = choose_staging(bytes_, free_b, total_b);
  CUdeviceptr base = 0;
  if (place_ == StagingPlace::Device) {
    KC_CU(cuMemAlloc(&device_, bytes_));
    base = device_;
  } else {
    if (KC_CU_TRY(cuMemAllocHost(&host_, bytes_)) != CUDA_SUCCESS)
      device_error(fmt::format("cannot allocate {} bytes of pinned host memory to reset the bytes the launch "
                               "writes before every launch; time with --no-restore (state carries over between "
                               "launches) or --restore-each (full restore from the capture)",
                               bytes_));
    base = reinterpret_cast<CUdeviceptr>(host_);
  }
  // The saved copy is the memory as restored (relocated, filtered): what the first launch saw.
  for (const auto& c : copies_) KC_CU(cuMemcpyAsync(base + c.src_offset, c.dst, c.size, s.stream()));
  s.synchronize();
}

StateReset::~StateReset() {
  if (device_) driver().cuMemFree(device_);
  if (host_) driver().cuMemFreeHost(host_);
}

void StateReset::reset(CUstream stream, ResetScope scope) const {
  const CUdeviceptr base = device_ ? device_ : reinterpret_cast<CUdeviceptr>(host_);
  for (const auto& c : scope == ResetScope::Changed ? copies_ : read_copies_)
    KC_CU(cuMemcpyAsync(c.dst, base + c.src_offset, c.size, stream));
}

}  // namespace kerncap::replay
