#pragma once
// Is the captured kernel deterministic? Two replays of the captured image from the same
// BEFORE state must leave the same bytes; float atomics and grid-wide reductions that
// reorder do not. Device memory is hashed in chunks while it streams to the host, so
// nothing holds a whole region in RAM.
#include <cstdint>
#include <map>
#include <vector>

#include "replay/compare_spec.hpp"

namespace kerncap::replay {

class Session;

// Per region (manifest order), one hash per `chunk` bytes of its current device contents.
using RegionHashes = std::vector<std::vector<uint64_t>>;
RegionHashes hash_regions(Session& s, uint64_t chunk = 1ull << 20);

// Restores and launches the session's image twice; the ids of the regions whose contents
// differ between the two launches (empty: deterministic as far as one pair can tell).
std::vector<uint32_t> nondeterministic_regions(Session& s);

// The spec for comparing a nondeterministic kernel: `base` plus, inside the regions `ids`,
// the typed spans of its signature (`typed`) with their default tolerance. Spans already in
// `base` keep their own types.
CompareSpec tolerant_spec(const CompareSpec& base, const std::vector<TypedSpan>& typed,
                          const std::vector<uint32_t>& ids, const format::Manifest& m);

// How far apart the captured kernel's own results land: two more replays from the same
// state, the regions `ids` compared as the element types of `typed` (the tolerant spec).
// Per region id, the largest absolute difference between float elements; regions above
// `max_region_bytes` are left out (not held in memory twice).
std::map<uint32_t, double> replay_spread(Session& s, const CompareSpec& typed, const std::vector<uint32_t>& ids,
                                         uint64_t max_region_bytes = uint64_t{1} << 30);

// Float reductions that reorder scatter their result by an amount the type's default
// tolerance does not know (a sum of 1,000 terms, an atomicAdd histogram): inside each region
// of `spread`, every float span's atol becomes at least `factor` times the spread the kernel
// showed against itself (two samples estimate it; the factor is the margin for a third).
inline constexpr double kSpreadFactor = 4.0;
CompareSpec widen_by_spread(CompareSpec spec, const std::map<uint32_t, double>& spread, const format::Manifest& m,
                            double factor = kSpreadFactor);

}  // namespace kerncap::replay
