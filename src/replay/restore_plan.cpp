#include "replay/restore_plan.hpp"

#include <algorithm>

namespace kerncap::replay {
namespace {

uint64_t up8(uint64_t base, uint64_t off) { return (base + off + 7) / 8 * 8 - base; }
uint64_t down8(uint64_t base, uint64_t off) { return (base + off) / 8 * 8 - base; }

}  // namespace

std::vector<RestoreStep> plan_restore(const std::vector<format::RegionBytes::Segment>& segments, uint64_t base,
                                      uint64_t size, const RestorePlanOptions& o) {
  const uint64_t piece = std::max<uint64_t>(o.piece, 16);
  std::vector<RestoreStep> steps;
  // Copies [lo, hi) in pieces of at most `piece` bytes that end on multiples of `piece` in
  // the region (so on the chunk store's 4 MiB windows: a piece decodes whole chunks, side by
  // side), moved back to an 8-byte address where the region's base is not 8-aligned.
  auto copy = [&](uint64_t lo, uint64_t hi) {
    while (lo < hi) {
      uint64_t end = std::min(hi, (lo / piece + 1) * piece);
      if (end < hi && down8(base, end) <= lo) end = std::min(hi, lo + piece);  // just past a grid point
      if (end < hi) end = down8(base, end);
      steps.push_back({lo, end - lo, std::nullopt});
      lo = end;
    }
  };
  uint64_t copy_from = 0;  // start of the copy not yet emitted
  for (const auto& s : segments) {
    if (!s.fill || o.copy_everything || s.size < o.min_fill) continue;
    // The region's own ends need no trimming: no word of the region straddles them.
    const uint64_t end = s.offset + s.size;
    const uint64_t lo = s.offset == 0 ? 0 : std::min(up8(base, s.offset), end);
    const uint64_t hi = end == size ? end : std::max(down8(base, end), lo);
    if (hi - lo < o.min_fill) continue;
    copy(copy_from, lo);
    steps.push_back({lo, hi - lo, s.fill});
    copy_from = hi;
  }
  copy(copy_from, size);
  return steps;
}

}  // namespace kerncap::replay
