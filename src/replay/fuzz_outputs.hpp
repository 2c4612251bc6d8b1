#pragma once
// The captured image's outputs of the fuzz trials (fuzz.hpp), kept in a temporary file, and
// the variant's compared with them. Where a region is large, blocks that hold one value
// everywhere (a pool's zeros) are named by the device check (uniform_check.hpp) instead of
// stored and read back: a trial of a kernel in a 100 GiB pool moves what the kernel wrote,
// not the pool. The comparison is the one of every byte on the host (compare_plan.hpp).
#include <cstdint>
#include <filesystem>
#include <vector>

#include "compare/compare.hpp"
#include "format/capture_dir.hpp"
#include "replay/compare_spec.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

class RecordedOutputs {
 public:
  explicit RecordedOutputs(const std::filesystem::path& file);  // created, for recording
  // Appends region i of `s` as its last launch left it.
  void record(Session& s, size_t i);
  // Recording ends; the regions are then compared in the order they were recorded.
  void finish();
  // Region i of `v` against the next recorded region, piece by piece; each result's offsets
  // are piece-relative, as compare::Comparator gives them.
  std::vector<compare::Result> compare_next(Session& v, size_t i, const std::vector<Piece>& pieces);

 private:
  std::filesystem::path path_;
  std::unique_ptr<format::BlobWriter> out_;
  std::unique_ptr<format::BlobReader> in_;
  uint64_t at_ = 0;  // the next recorded region in the file
};

}  // namespace kerncap::replay
