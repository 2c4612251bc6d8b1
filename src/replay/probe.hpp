#pragma once
// Write sets the Compute Sanitizer cannot see. Its instrumentation reports the loads and
// stores a thread executes, but not the copies the Tensor Memory Accelerator makes
// (cp.async.bulk: Hopper GEMMs in cuBLAS and CUTLASS, FlashAttention-3, Triton with TMA), so
// such a kernel's output region shows no access at all, and strong validation would poison
// nothing. Probing finds those bytes empirically: fill one span of a region with a poison,
// replay, read it back, do it again with another poison. Bytes that come back equal in both
// runs — and equal to what the application's launch left there — were written without being
// read; bytes still holding the poisons were not touched. If anything else differs (another
// region's result changed, a byte depends on the poison), the region is read: no conclusion.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "format/footprint.hpp"
#include "format/manifest.hpp"

namespace kerncap::replay {

class Session;

// Where the pointer that starts a span was found: the parameter buffer, or a region's memory.
inline constexpr size_t kFromParams = static_cast<size_t>(-1);
// Or no pointer at all: the span is a whole CUDA array (its region of kind array) with a
// surface object over it. Surface stores (SUST) are as invisible to the sanitizer as TMA's, and
// an array written only through them would otherwise have nothing poisoned for strong validation.
inline constexpr size_t kFromSurface = static_cast<size_t>(-2);

// A span of one region (manifest order) worth probing: a pointer to its start lies in the
// captured parameter buffer (anywhere in it, 8-byte aligned: tensor maps and by-value structs
// included) or in the memory of a region (`from`: a device array of pointers, as grouped GEMMs
// pass A/B/C/D, or a tensor map built in device memory); it reaches the next such pointer into
// the region or the region's end, so inputs and outputs that share one allocation (PyTorch's
// caching allocator) are probed apart; the footprint recorded no access inside it, and it holds
// no pointer itself (a table or tensor map the kernel reads, which a poison would make fault).
// Besides, every CUDA array a surface object of the launch is over, whole (kFromSurface).
struct ProbeSpan {
  size_t region = 0;
  uint64_t begin = 0, end = 0;  // region-relative
  size_t from = kFromParams;
  bool operator==(const ProbeSpan&) const = default;
};

// The memory the kernel can find pointers in besides its parameters: region bytes as the
// replay holds them (`region` in manifest order; a region may come twice, before and after
// the launch), and each region's replay address (its words hold those, relocation applied).
struct PointerMemory {
  struct Source {
    size_t region = 0;
    std::vector<uint8_t> bytes;
  };
  std::vector<Source> sources;
  std::vector<uint64_t> replay_bases;  // per region (manifest order)
};

// At most `limit` spans, in regions of at most `max_region_bytes`.
std::vector<ProbeSpan> probe_candidates(const format::Manifest& m, std::span<const uint8_t> params,
                                        const format::Footprint& f, const PointerMemory& memory,
                                        uint64_t max_region_bytes = uint64_t{1} << 30, size_t limit = 64);
// The parameter buffer alone.
std::vector<ProbeSpan> probe_candidates(const format::Manifest& m, std::span<const uint8_t> params,
                                        const format::Footprint& f, uint64_t max_region_bytes = uint64_t{1} << 30,
                                        size_t limit = 8);

inline constexpr uint8_t kProbePoisonA = 0xA5, kProbePoisonB = 0x5A;
// From a span read back after the two poisoned replays and its expected final bytes:
// the bytes written without being read (1-byte granules), or nothing when the runs show the
// span is read or the written bytes disagree with the application's result.
std::optional<format::Bitmap> classify_probe(std::span<const uint8_t> after_a, std::span<const uint8_t> after_b,
                                             std::span<const uint8_t> expected);

// Probes the candidates on an open session of the captured image (restores, launches) and
// records what it proves in `f` (written bitmap, probed flag). The pointers are looked for in
// the parameter buffer and in every region of at most 16 MiB (256 MiB in all), before and
// after the launch. A region's spans are probed together first (a grouped GEMM's outputs,
// one span per group: two replays), then, when that shows a read, one by one (at most 48
// poisoned replays in all). Returns the ids of the regions where it proved writes.
// A kernel whose replay disagrees with the application is not probed (nothing to lean on).
std::vector<uint32_t> probe_writes(Session& s, format::Footprint& f);

}  // namespace kerncap::replay
