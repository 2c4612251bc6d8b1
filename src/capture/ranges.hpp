#pragma once
// Bookkeeping of the application's live memory ranges (no CUDA here, unit tested).
// Allocations come and go through driver callbacks; a VMM unmap may cut a range in pieces.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace kerncap::capture {

struct TrackedRange {
  uint64_t base = 0;
  uint64_t size = 0;
  int kind = 0;  // format::MemKind, kept as int so this header needs no format dependency
  uint64_t end() const { return base + size; }
};

class RangeSet {
 public:
  // Adds [base, base+size). The bytes of older ranges it overlaps are dropped first (a
  // stale range whose free we never saw cannot coexist with a live allocation at the same
  // address); their remainders on either side stay.
  void add(uint64_t base, uint64_t size, int kind);
  // Removes the range starting exactly at `base` (cuMemFree and friends). Returns it.
  std::optional<TrackedRange> erase_at(uint64_t base);
  // Removes [base, base+size) from whatever ranges overlap it, keeping the remainders.
  void erase_span(uint64_t base, uint64_t size);
  std::optional<TrackedRange> find(uint64_t addr) const;
  std::vector<TrackedRange> all() const;  // sorted by base
  uint64_t total_bytes() const;
  size_t count() const { return ranges_.size(); }

 private:
  std::map<uint64_t, TrackedRange> ranges_;
};

// Merges ranges of `kind` that touch end to start into one (ranges sorted by base, as
// RangeSet::all gives them): PyTorch's expandable segments map a VMM range piece by piece,
// and the capture should see one region. Other kinds stay as they are.
std::vector<TrackedRange> coalesce(std::vector<TrackedRange> ranges, int kind);

// Whether [begin, end) overlaps a span of `spans` (start -> end, disjoint).
bool overlaps_any(const std::map<uint64_t, uint64_t>& spans, uint64_t begin, uint64_t end);

}  // namespace kerncap::capture
