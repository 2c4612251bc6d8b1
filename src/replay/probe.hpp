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

// A span of one region (manifest order) worth probing: the captured parameter buffer holds a
// pointer to its start (anywhere in the buffer, 8-byte aligned: tensor maps and by-value
// structs included); it reaches the next such pointer into the region or the region's end,
// so inputs and outputs that share one allocation (PyTorch's caching allocator) are probed
// apart; the footprint recorded no access inside it.
struct ProbeSpan {
  size_t region = 0;
  uint64_t begin = 0, end = 0;  // region-relative
  bool operator==(const ProbeSpan&) const = default;
};
// At most `limit` spans, in regions of at most `max_region_bytes`.
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
// records what it proves in `f` (written bitmap, probed flag). Returns the ids of the regions
// where it proved writes.
// A kernel whose replay disagrees with the application is not probed (nothing to lean on).
std::vector<uint32_t> probe_writes(Session& s, format::Footprint& f);

}  // namespace kerncap::replay
