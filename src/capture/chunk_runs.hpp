#pragma once
// Which byte ranges of a region the snapshot copies, decided from per-chunk signatures
// (the device scan: 0 for an all-zero chunk, else a hash). Pure logic, unit-tested.
#include <cstdint>
#include <vector>

namespace kerncap::capture {

struct ByteRun {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const ByteRun&) const = default;
};

// BEFORE: the runs of non-zero chunks of a region of `size` bytes, where zero gaps shorter
// than `min_gap` bytes are stored too (fewer, longer runs: fewer copies, a shorter manifest).
std::vector<ByteRun> nonzero_runs(const std::vector<uint64_t>& sig, uint64_t size, uint32_t chunk, uint64_t min_gap);

// The gap that keeps a region of `size` bytes to at most about `max_runs` stored runs, and
// never below `floor` bytes.
uint64_t merge_gap(uint64_t size, uint64_t max_runs, uint64_t floor);

// AFTER: the runs of chunks whose signature differs between `before` and `after`, exactly
// (contiguous changed chunks form one run).
std::vector<ByteRun> changed_runs(const std::vector<uint64_t>& before, const std::vector<uint64_t>& after,
                                  uint64_t size, uint32_t chunk);

}  // namespace kerncap::capture
