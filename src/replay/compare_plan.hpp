#pragma once
// Which bytes of a region the comparison with AFTER reads back (no CUDA here, unit tested).
//
// Where the expected bytes are one value the capture never stored (the zeros of a sparse
// region that the launch did not change, an omitted region's or a pruned range's fill),
// the device says per block whether the replay left that value there (uniform_check.hpp),
// and only blocks where it did not, and blocks whose expected bytes are stored, are read
// back and compared on the host. A 100 GiB pool of zeros with 16 MiB written reads back
// the 16 MiB, not the pool.
//
// The verdict is the one the host comparison of every byte gives: blocks are the
// comparator's own (compare::kBlockBytes, counted from the start of each staging window of
// the piece, as the host comparison feeds them), a block the device proved identical adds
// what the comparator adds for identical bytes (Comparator::feed_identical: byte and
// element counts only, for a value that is no NaN or Inf), and every other block is fed to
// the comparator whole, exactly as before.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "format/region_bytes.hpp"
#include "replay/restore_plan.hpp"

namespace kerncap::replay {

// Region-relative bytes [begin, end) whose expected bytes all hold `value`.
struct UniformRange {
  uint64_t begin = 0, end = 0;
  uint8_t value = 0;
  bool operator==(const UniformRange&) const = default;
};

// Where a region's expected bytes (BEFORE with the AFTER runs applied, pointer words into
// moved spans rewritten) are known without reading anything: fills of BEFORE (`before`,
// RegionBytes::segments) that no AFTER run (`after`, sorted, apart) touches, less any byte
// whose 8-byte word (at device address base + offset) holds a byte outside the range (a
// word across the edge may be a pointer that relocation rewrites), and no fill whose own
// word `moved` says relocation rewrites.
std::vector<UniformRange> expected_uniform(const std::vector<format::RegionBytes::Segment>& before,
                                           const std::vector<ByteRange>& after, uint64_t base, uint64_t size,
                                           const std::function<bool(uint64_t word)>& moved);

// The blocks of one piece [begin, end) of a region as the host comparison walks them:
// windows of `step` bytes from the piece's start (what one staging buffer holds), each cut
// into blocks of `block` bytes from the window's start (the last block of a window, and of
// the piece, may be shorter). The device check uses the same numbering.
struct CompareGrid {
  uint64_t begin = 0, end = 0, step = 0, block = 0;
  uint64_t per_window() const { return (step + block - 1) / block; }
  uint64_t blocks() const;
  ByteRange block_at(uint64_t index) const;  // region-relative
};

// The device check's answer for a block: the value all its bytes hold, or kMixed.
inline constexpr uint32_t kMixed = 0x100;

// One step of comparing a piece, in order, covering it: `same` set: the device found every
// byte of [offset, offset + size) equal to the expected `*same` (fed as identical, nothing
// read); `equal`: the device found them equal to its copy of the expected bytes (fed as
// identical, nothing read); neither: read back and compared on the host (never across a
// window: one staging buffer holds it).
struct CompareStep {
  uint64_t offset = 0, size = 0;
  std::optional<uint8_t> same;
  bool equal = false;
  bool identical() const { return same.has_value() || equal; }
  bool operator==(const CompareStep&) const = default;
};

// `device`: per block of `g` the device check's answer, or empty when it did not run (then
// every byte is compared on the host, in one step per window). `uniform`: expected_uniform
// of the region (sorted), restricted by the caller to values the piece's type compares as
// plain (no NaN or Inf element).
std::vector<CompareStep> plan_compare(const CompareGrid& g, const std::vector<UniformRange>& uniform,
                                      std::span<const uint32_t> device);

// The same steps where the device compared every block with its copy of the expected bytes
// (UniformCheck::equal): `equal` per block of `g` (0: equal; anything else: differs),
// `plain` per block whether identical bytes there add only byte and element counts to the
// comparator (no NaN or Inf element of the piece's type; plain_blocks), empty: all plain. A
// block both equal and plain is fed as identical; every other block is read back and fed
// whole, so the comparator sees every byte that differs exactly as it would without the
// device. `equal` empty or of another size than g's blocks: every byte read back.
std::vector<CompareStep> plan_compare_equal(const CompareGrid& g, std::span<const uint32_t> equal,
                                            std::span<const uint8_t> plain);

// Per block of `g`, whether `expected` (the piece's expected bytes, from g.begin) fed as
// both sides adds only byte and element counts to `is_plain`'s comparator: is_plain(bytes, n)
// answers for one block. The equal-check's plain list, computed once per piece and kept.
std::vector<uint8_t> plain_blocks(const CompareGrid& g, const uint8_t* expected,
                                  const std::function<bool(const uint8_t*, uint64_t)>& is_plain);

// The uniform ranges of a region [0, size) from the device check's answers over its blocks
// of `block` bytes (a grid whose step is a multiple of the block: block c is [c * block, ...)):
// what a recorded run left where nothing was read back (fuzz_outputs.hpp).
std::vector<UniformRange> uniform_from_answers(std::span<const uint32_t> answers, uint64_t size, uint64_t block);

// Whether the device check is worth a launch on a piece: its blocks that lie wholly in a
// uniform range hold at least `min_bytes` (below that, reading them back costs less than a
// launch and its wait; most captures' regions never get there).
bool worth_checking(const CompareGrid& g, const std::vector<UniformRange>& uniform, uint64_t min_bytes = 4ull << 20);

}  // namespace kerncap::replay
