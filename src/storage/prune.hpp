#pragma once
// `kerncap prune OUT`: with the capture's footprint (format/footprint.hpp), drop the BEFORE
// bytes the launch never touches (neither reads nor writes). The dropped ranges are recorded
// in the manifest (Region::pruned, format version 3) and replayed as kOmittedFill, so a read
// the footprint missed turns into a FAIL, never a pass. Chunks no longer referenced are
// deleted from the capture's own chunks/ (never from a shared store).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "format/manifest.hpp"

namespace kerncap::format {

// Touched ranges are widened to this alignment and untouched gaps shorter than
// max(kPruneMinGap, region size / kMaxPrunedRanges) are kept: a scattered access pattern
// costs a few kept KiB, never millions of manifest entries.
inline constexpr uint64_t kPruneGranule = 4096;
inline constexpr uint64_t kPruneMinGap = uint64_t{64} << 10;
inline constexpr uint64_t kMaxPrunedRanges = 8192;

struct RegionPrune {
  uint32_t id = 0;
  std::vector<StoredRun> stored;  // what stays stored
  std::vector<StoredRun> pruned;  // the region's pruned ranges afterwards (earlier ones included)
  uint64_t stored_before = 0, stored_after = 0;
  bool changed = false;
  std::string kept_whole;  // why the region is left as it is ("" when pruned)
};

struct PrunePlan {
  std::vector<RegionPrune> regions;  // manifest order
  uint64_t stored_before = 0, stored_after = 0;
  uint64_t pruned_after = 0;  // bytes replayed as fill because of pruning, all regions
  bool changed() const;
};

// What pruning would do, from the manifest and its footprint (offline, nothing written).
struct Footprint;
PrunePlan plan_prune(const Manifest& m, const Footprint& f);

struct PruneResult {
  PrunePlan plan;
  uint64_t files_deleted = 0, bytes_reclaimed = 0;  // files removed from the capture
  uint64_t chunks_written = 0, bytes_written = 0;
  bool external_store = false;
  std::string summary;  // what `kerncap prune` prints
};

// Prunes the capture in `dir` (OUT or OUT/capture) in place: new chunks are written first,
// then the manifest is replaced atomically, then unreferenced files are removed, so the
// capture is whole at every moment. Error(Input) without a footprint ("run kerncap
// footprint first"), for a footprint of another capture, or a damaged capture.
PruneResult prune_capture(const std::filesystem::path& dir, bool dry_run);

}  // namespace kerncap::format
