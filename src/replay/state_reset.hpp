#pragma once
// Stateful-safe timing: before every launch, put back the bytes a launch changes, so the
// second launch sees the memory the first one saw (a CUB onesweep sort whose tile counters
// the first launch consumed, a kernel that takes work items from a global counter, an
// in-place update). Only those bytes move, device to device when the copy fits in free GPU
// memory, and the copies run outside the timed interval.
//
// Which bytes: the capture's AFTER runs (what the application's launch changed) united with
// the footprint's written bytes when a footprint exists (a replay may write bytes whose
// value did not change in the application, e.g. a counter reset to its old value).
#include <cstdint>
#include <string>
#include <vector>

#include <cuda.h>

#include "format/footprint.hpp"
#include "format/manifest.hpp"

namespace kerncap::replay {

class Session;

// Bytes [offset, offset + size) of region `index` (manifest order).
struct ResetRange {
  size_t index = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const ResetRange&) const = default;
};

// The union of the AFTER runs and the footprint's written bytes (`footprint` may be null),
// sorted by region then offset, overlapping and adjacent ranges merged, clamped to each
// region. Pure. Throws Error(Input) when an AFTER run names no region or the footprint does
// not describe this capture's regions.
std::vector<ResetRange> reset_ranges(const format::Manifest& m, const format::Footprint* footprint);
uint64_t total_bytes(const std::vector<ResetRange>& ranges);

// The parts of `ranges` (reset_ranges' output) the launch may read. Timing puts back only
// these: bytes the footprint saw written and never loaded cannot change what the launch
// computes, and writing them back costs the timed launch what the application's does not
// pay: the copy streams through L2 and evicts the launch's inputs (measured on an H200, a
// memory-bound 4M-float `y = a*x + 1` replayed warm at 14.0 µs with its 16 MiB output put
// back first, 11.7 µs without, 11.65 µs in the application). Whole ranges where there is no
// footprint or where its region was probed (stores the sanitizer cannot see: its loads are
// not seen either). Pure.
std::vector<ResetRange> read_parts(const std::vector<ResetRange>& ranges, const format::Manifest& m,
                                   const format::Footprint* footprint);

// Where the saved copy lives: the GPU when `bytes` leaves a margin of free memory (the
// larger of 256 MiB and 5 % of the device), else pinned host memory.
enum class StagingPlace { Device, Host };
StagingPlace choose_staging(uint64_t bytes, uint64_t free_bytes, uint64_t total_bytes);
std::string to_string(StagingPlace p);

// One device copy: `size` bytes from `src` (staging) to `dst` (replay address).
struct ResetCopy {
  CUdeviceptr dst = 0;
  uint64_t src_offset = 0;  // into the staging buffer
  uint64_t size = 0;
  bool operator==(const ResetCopy&) const = default;
};
// The copies for ranges at the given region addresses, staged back to back in range order;
// copies contiguous in both the staging buffer and the device are merged. Pure.
std::vector<ResetCopy> plan_copies(const std::vector<ResetRange>& ranges, const std::vector<uint64_t>& addresses);

// The copies for `parts` (pieces of `ranges`, as read_parts gives them) from the staging
// plan_copies laid out for `ranges`. Pure.
std::vector<ResetCopy> plan_part_copies(const std::vector<ResetRange>& ranges, const std::vector<ResetRange>& parts,
                                        const std::vector<uint64_t>& addresses);

// What a reset puts back: every byte a launch changes (between evaluations, and after a
// timing, so that what follows sees the memory as restored), or only those it may read
// (between the timed launches: read_parts).
enum class ResetScope { Changed, Read };

// Saves the ranges' current device bytes (take it right after a restore) and writes them
// back on demand. Owns its staging memory.
class StateReset {
 public:
  explicit StateReset(Session& s);
  ~StateReset();
  StateReset(const StateReset&) = delete;
  StateReset& operator=(const StateReset&) = delete;

  // Enqueues the copies on `stream` (no wait).
  void reset(CUstream stream, ResetScope scope = ResetScope::Changed) const;
  uint64_t bytes(ResetScope scope = ResetScope::Changed) const {
    return scope == ResetScope::Changed ? bytes_ : read_bytes_;
  }
  size_t ranges(ResetScope scope = ResetScope::Changed) const {
    return scope == ResetScope::Changed ? ranges_ : read_ranges_;
  }
  size_t copies() const { return copies_.size(); }
  StagingPlace place() const { return place_; }

 private:
  std::vector<ResetCopy> copies_, read_copies_;
  uint64_t bytes_ = 0, read_bytes_ = 0;
  size_t ranges_ = 0, read_ranges_ = 0;
  StagingPlace place_ = StagingPlace::Device;
  CUdeviceptr device_ = 0;
  void* host_ = nullptr;
};

}  // namespace kerncap::replay
