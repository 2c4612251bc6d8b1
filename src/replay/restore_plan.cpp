#include "replay/restore_plan.hpp"

#include <algorithm>

namespace kerncap::replay {
namespace {

uint64_t up8(uint64_t base, uint64_t off) { return (base + off + 7) / 8 * 8 - base; }
uint64_t down8(uint64_t base, uint64_t off) { return (base + off) / 8 * 8 - base; }

}  // namespace

const std::vector<ByteRange>& FilterReach::of(size_t region) const {
  static const std::vector<ByteRange> none;
  return region < ranges.size() ? ranges[region] : none;
}

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
  // [offset, end) all holds `value`: a memset when it is long enough once trimmed.
  auto fill = [&](uint64_t offset, uint64_t end, uint8_t value) {
    if (end - offset < o.min_fill) return;
    // The region's own ends need no trimming: no word of the region straddles them.
    const uint64_t lo = offset == 0 ? 0 : std::min(up8(base, offset), end);
    const uint64_t hi = end == size ? end : std::max(down8(base, end), lo);
    if (hi - lo < o.min_fill) return;
    copy(copy_from, lo);
    steps.push_back({lo, hi - lo, value});
    copy_from = hi;
  };
  const std::vector<ByteRange> none;
  const std::vector<ByteRange>& staged = o.staged ? *o.staged : none;
  size_t k = 0;  // the first staged range that may reach into the current segment
  for (const auto& s : segments) {
    if (!s.fill || o.copy_everything || s.size < o.min_fill) continue;
    // The fill less the staged ranges inside it.
    const uint64_t end = s.offset + s.size;
    while (k < staged.size() && staged[k].end <= s.offset) ++k;
    uint64_t at = s.offset;
    for (size_t j = k; j < staged.size() && staged[j].begin < end; ++j) {
      if (staged[j].begin > at) fill(at, staged[j].begin, *s.fill);
      at = std::max(at, std::min(staged[j].end, end));
    }
    if (at < end) fill(at, end, *s.fill);
  }
  copy(copy_from, size);
  return steps;
}

ReachSplit split_reach(const std::vector<ByteRange>& ranges, uint64_t min_memset) {
  ReachSplit out;
  for (const ByteRange& r : ranges) {
    if (r.end <= r.begin) continue;
    (r.end - r.begin >= min_memset ? out.memset : out.staged).push_back(r);
  }
  return out;
}

std::vector<RestoreStep> overlay_fills(const std::vector<RestoreStep>& steps, const std::vector<ByteRange>& ranges,
                                       uint8_t value) {
  std::vector<RestoreStep> out;
  size_t k = 0;
  for (const RestoreStep& s : steps) {
    if (!s.fill) continue;
    const uint64_t end = s.offset + s.size;
    while (k < ranges.size() && ranges[k].end <= s.offset) ++k;
    for (size_t j = k; j < ranges.size() && ranges[j].begin < end; ++j) {
      const uint64_t lo = std::max(ranges[j].begin, s.offset), hi = std::min(ranges[j].end, end);
      if (lo < hi) out.push_back({lo, hi - lo, value});
    }
  }
  return out;
}

std::vector<ByteRange> merge_ranges(std::vector<ByteRange> ranges) {
  std::erase_if(ranges, [](const ByteRange& r) { return r.end <= r.begin; });
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (!out.empty() && r.begin <= out.back().end) out.back().end = std::max(out.back().end, r.end);
    else out.push_back(r);
  }
  return out;
}

}  // namespace kerncap::replay
