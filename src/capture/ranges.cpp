#include "capture/ranges.hpp"

namespace kerncap::capture {

void RangeSet::add(uint64_t base, uint64_t size, int kind) {
  if (size == 0) return;
  erase_span(base, size);
  ranges_[base] = TrackedRange{base, size, kind};
}

std::optional<TrackedRange> RangeSet::erase_at(uint64_t base) {
  auto it = ranges_.find(base);
  if (it == ranges_.end()) return std::nullopt;
  TrackedRange r = it->second;
  ranges_.erase(it);
  return r;
}

void RangeSet::erase_span(uint64_t base, uint64_t size) {
  const uint64_t end = base + size;
  auto it = ranges_.upper_bound(base);
  if (it != ranges_.begin()) --it;
  while (it != ranges_.end() && it->second.base < end) {
    TrackedRange r = it->second;
    if (r.end() <= base) {
      ++it;
      continue;
    }
    it = ranges_.erase(it);
    if (r.base < base) ranges_[r.base] = TrackedRange{r.base, base - r.base, r.kind};
    if (r.end() > end) ranges_[end] = TrackedRange{end, r.end() - end, r.kind};
  }
}

std::optional<TrackedRange> RangeSet::find(uint64_t addr) const {
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (addr < it->second.end()) return it->second;
  return std::nullopt;
}

std::vector<TrackedRange> RangeSet::all() const {
  std::vector<TrackedRange> out;
  out.reserve(ranges_.size());
  for (const auto& [b, r] : ranges_) out.push_back(r);
  return out;
}

std::vector<TrackedRange> coalesce(std::vector<TrackedRange> ranges, int kind) {
  std::vector<TrackedRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && out.back().kind == kind && r.kind == kind && out.back().end() == r.base)
      out.back().size += r.size;
    else
      out.push_back(r);
  }
  return out;
}

uint64_t RangeSet::total_bytes() const {
  uint64_t n = 0;
  for (const auto& [b, r] : ranges_) n += r.size;
  return n;
}

bool overlaps_any(const std::map<uint64_t, uint64_t>& spans, uint64_t begin, uint64_t end) {
  auto it = spans.lower_bound(end);  // the first span starting at or after `end` cannot overlap
  if (it == spans.begin()) return false;
  --it;  // the last span starting before `end`: the only one that can reach past `begin`
  return it->second > begin;
}

}  // namespace kerncap::capture
