#include "capture/closure.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace kerncap::capture {

RangeIndex::RangeIndex(const std::vector<Range>& ranges) : order_(ranges.size()) {
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return ranges[a].base < ranges[b].base; });
  for (size_t i : order_) sorted_.push_back(ranges[i]);
}

std::optional<size_t> RangeIndex::find(uint64_t address) const {
  auto it = std::upper_bound(sorted_.begin(), sorted_.end(), address,
                             [](uint64_t a, const Range& r) { return a < r.base; });
  if (it == sorted_.begin()) return std::nullopt;
  --it;
  if (address - it->base >= it->size) return std::nullopt;
  return order_[static_cast<size_t>(it - sorted_.begin())];
}

std::vector<size_t> RangeIndex::pointed(std::span<const uint8_t> bytes) const {
  std::vector<size_t> out;
  std::vector<bool> seen(order_.size());
  for (size_t o = 0; o + 8 <= bytes.size(); o += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + o, 8);
    if (const auto i = find(w); i && !seen[*i]) {
      seen[*i] = true;
      out.push_back(*i);
    }
  }
  return out;
}

std::vector<bool> closure(const std::vector<ClosureRegion>& regions, std::span<const uint8_t> params,
                          const std::function<std::vector<size_t>(size_t)>& pointers_in) {
  std::vector<RangeIndex::Range> ranges;
  for (const auto& r : regions) ranges.push_back({r.base, r.size});
  const RangeIndex index(ranges);
  std::vector<bool> reached(regions.size());
  std::vector<size_t> work;
  auto reach = [&](size_t i) {
    if (reached[i]) return;
    reached[i] = true;
    work.push_back(i);
  };
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].root) reach(i);
  for (size_t i : index.pointed(params)) reach(i);
  while (!work.empty()) {
    const size_t i = work.back();
    work.pop_back();
    for (size_t j : pointers_in(i)) reach(j);
  }
  // A kept region is in the capture either way; its words matter only once it is reached.
  std::vector<bool> in(regions.size());
  for (size_t i = 0; i < regions.size(); ++i) in[i] = reached[i] || regions[i].keep;
  return in;
}

}  // namespace kerncap::capture
