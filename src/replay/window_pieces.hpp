#pragma once
// The tensors of one allocation, for `--live-out auto` (docs/window.md "Live-out"): under a
// caching allocator (PyTorch) one captured region is a segment holding many tensors, and one of
// them being read after the window made the whole segment live, so a fused replacement that
// never writes a dead intermediate (a SiLU's output consumed only by the multiply after it)
// failed on bytes nothing reads. A region is cut into PIECES where the window's own kernels
// point into it (each pointer word of their parameters: the tensors they read and write start
// there) and where the operation that last changed the bytes changes (writer_cuts: a smaller
// tensor given the front of a freed block shares its pointer with the dead tail), each piece
// spanning the bytes the window changed between two cuts; a piece is read
// when the observation after the window (window_liveout.json, version 2) reached it:
//   - a later launch's pointer inside the piece's span between its cuts, or, when it lands
//     where the window changed nothing, the next piece after it (a kernel reads forward);
//   - a later copy's source range overlapping it.
// What it cannot see, and why it errs towards judging less: a later kernel given a pointer to
// one piece that reads on into the next (a tensor of the window read as part of a larger view).
// A region not read at all, or whose reads are not all listed, is decided as a whole, as before.
// Pure (no CUDA): unit tested.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "format/window_liveout.hpp"

namespace kerncap::replay {

struct WindowPiece {
  uint64_t offset = 0, size = 0;  // region-relative: the first to the last byte the window changed in it
  bool read = false;
  std::string evidence;
};

// `changed`: the region's AFTER runs as (offset, size), any order; `cuts`: region-relative
// offsets the window's kernels point to; `observed`: the region's observation.
std::vector<WindowPiece> window_pieces(uint64_t region_size, std::vector<std::pair<uint64_t, uint64_t>> changed,
                                       std::vector<uint64_t> cuts, const format::LiveOutRegion& observed);

// A region's changed runs (offset, size) grouped by the span between two cuts they fall in (a
// run across a cut is split there), in offset order; empty groups are left out. Strong
// validation probes a region the window reads before writing piece by piece (window_poison.hpp).
std::vector<std::vector<std::pair<uint64_t, uint64_t>>> split_runs_at_cuts(
    std::vector<std::pair<uint64_t, uint64_t>> runs, std::vector<uint64_t> cuts);

// Cuts where the operation that last changed the bytes changes (a freed block given to a smaller
// tensor: PyTorch put the norm's output over the first half of its float intermediate, both
// starting at one pointer, so pointer cuts alone kept the dead tail with the read output).
// `stretches`: one region's bytes inside the window's changed runs, in offset order, each
// stretch `bytes` contiguous bytes from `offset` last changed by operation `writer`, or -1 where
// no operation of the replay changed them (AFTER's runs hold such bytes: a float rewritten with
// its old high byte). The -1 stretches are left out, neighbours of one writer joined across them;
// a byte written last with the value it already had is seen as the earlier writer's, so a
// stretch shorter than `min_span` changed bytes is then taken as its predecessor's (such
// coincidences are a few bytes; a tensor is longer). Returns, for each stretch of another writer
// after the first, the offset where the one before it ends (its last changed byte + 1), in order:
// the bytes between belong to the later piece.
struct WriterStretch {
  uint64_t offset = 0, bytes = 0;
  int32_t writer = -1;
};
std::vector<uint64_t> writer_cuts(std::span<const WriterStretch> stretches, uint64_t min_span = 256);

// The last writer of each byte of one changed span (region offsets [lo, lo + size)), from the
// span's bytes before the window and after each operation in turn.
class LastWriters {
 public:
  LastWriters(uint64_t lo, std::vector<uint8_t> before);
  // The span's bytes after operation `op` (the same size as `before`).
  void after(int32_t op, std::span<const uint8_t> now);
  // The stretches (contiguous bytes of one writer, -1: none changed them) of the changed runs
  // (region offset, size; inside the span, sorted); empty when they would be more than
  // `max_stretches` (the writers alternate too finely to be tensors).
  std::vector<WriterStretch> stretches(std::span<const std::pair<uint64_t, uint64_t>> runs,
                                       size_t max_stretches = size_t{1} << 20) const;

 private:
  uint64_t lo_;
  std::vector<uint8_t> prev_;
  std::vector<int32_t> writer_;
};

// Appends to `cuts` the region-relative value of every 8-byte-aligned word of `params` that
// points into [base, base + size).
void add_pointer_cuts(std::span<const uint8_t> params, uint64_t base, uint64_t size, std::vector<uint64_t>* cuts);

}  // namespace kerncap::replay
