#pragma once
// Is the captured kernel deterministic? Two replays of the captured image from the same
// BEFORE state must leave the same bytes; float atomics and grid-wide reductions that
// reorder do not. Device memory is hashed in chunks while it streams to the host, so
// nothing holds a whole region in RAM.
#include <cstdint>
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

}  // namespace kerncap::replay
