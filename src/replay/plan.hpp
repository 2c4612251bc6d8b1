#pragma once
// Where to reserve and what to back with physical memory (no CUDA here, unit tested).
// Measured on the H100 (docs/replay.md): the driver honours address hints aligned to
// 32 MiB but often moves 2 MiB-aligned ones, so captured regions are covered by 32 MiB
// blocks (neighbours merged) and only the 2 MiB pieces holding captured bytes are mapped.
#include <cstdint>
#include <functional>
#include <vector>

namespace kerncap::replay {

inline constexpr uint64_t kBlockAlign = 32ull << 20;
inline constexpr uint64_t kPieceAlign = 2ull << 20;

struct Span {
  uint64_t begin = 0, end = 0;
  uint64_t size() const { return end - begin; }
  bool contains(uint64_t a) const { return a >= begin && a < end; }
};

struct Block {
  Span span;                  // 32 MiB-aligned reservation
  std::vector<Span> pieces;   // 2 MiB-aligned runs to map, sorted, merged
  std::vector<uint32_t> regions;  // indices into the input
};

// Regions as [begin, end). Returns blocks sorted by address.
std::vector<Block> plan_blocks(const std::vector<Span>& regions, uint64_t block_align = kBlockAlign,
                               uint64_t piece_align = kPieceAlign);

// The piece runs (aligned to piece_align, merged) that cover `regions` inside `within`.
std::vector<Span> plan_pieces(const std::vector<Span>& regions, uint64_t piece_align = kPieceAlign);

// A run of pieces cut where the kind of memory behind it changes: each `step` bytes from the
// run's start is host memory when `host(piece)` says so, and neighbours of one kind are merged.
// plan_pieces merges neighbouring pieces whatever they back, so a device region right after a
// small host-mapped one was replayed in pinned host memory with it (a PyTorch segment beside a
// 4-byte mapped flag: the kernel writing it ran 16x slower than in the application).
struct KindRun {
  Span span;
  bool host = false;
};
std::vector<KindRun> split_by_kind(const Span& run, uint64_t step, const std::function<bool(const Span&)>& host);

inline uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace kerncap::replay
