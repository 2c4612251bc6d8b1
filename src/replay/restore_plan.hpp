#pragma once
// How restore writes one region back (no CUDA here, unit tested): bytes that all hold one
// value (zeros a sparse capture did not store, an omitted region, pruned ranges) become a
// memset on the device, the rest is read into the staging buffer and copied. Only stored
// bytes then cross PCIe, and a capture of mostly zeros restores at the device's memset speed.
#include <cstdint>
#include <optional>
#include <vector>

#include "format/region_bytes.hpp"

namespace kerncap::replay {

struct RestoreStep {
  uint64_t offset = 0, size = 0;  // region-relative
  std::optional<uint8_t> fill;    // set: memset on the device; unset: read, stage and copy
};

struct RestorePlanOptions {
  uint64_t piece = 64ull << 20;     // the staging buffer: no copy step is larger
  uint64_t min_fill = 1ull << 20;   // shorter fills ride along in the copy (one copy beats many small calls)
  bool copy_everything = false;     // a restore filter sees every byte: no memset steps
};

// Steps that cover [0, size) in order. A copy step ends on an 8-byte device address (base +
// offset) unless it ends the region, so no pointer word straddles two steps and relocation
// sees every word; a fill step starts and ends on one too (it is trimmed, the bytes trimmed
// off go to the copies beside it).
std::vector<RestoreStep> plan_restore(const std::vector<format::RegionBytes::Segment>& segments, uint64_t base,
                                      uint64_t size, const RestorePlanOptions& o = {});

}  // namespace kerncap::replay
