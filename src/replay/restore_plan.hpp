#pragma once
// How restore writes one region back (no CUDA here, unit tested): bytes that all hold one
// value (zeros a sparse capture did not store, an omitted region, pruned ranges) become a
// memset on the device, the rest is read into the staging buffer and copied. Only stored
// bytes then cross PCIe, and a capture of mostly zeros restores at the device's memset speed.
//
// A restore filter (strong validation's poison, fuzzing's inputs, the write probe) changes
// some bytes on the host before they are copied. It says which bytes it may change (its
// reach): only those leave the memsets, so a poisoned restore of a 100 GiB pool of zeros
// stages the bytes the launch writes, not the pool. A filter that writes one constant over
// its reach (the poison) is not staged at all where the bytes are a fill: a second memset,
// with the constant, goes over the first.
#include <cstdint>
#include <optional>
#include <vector>

#include "format/region_bytes.hpp"

namespace kerncap::replay {

struct RestoreStep {
  uint64_t offset = 0, size = 0;  // region-relative
  std::optional<uint8_t> fill;    // set: memset on the device; unset: read, stage and copy
};

// Region-relative bytes [begin, end).
struct ByteRange {
  uint64_t begin = 0, end = 0;
  bool operator==(const ByteRange&) const = default;
};

// What a restore filter may change. Without a reach, a filter may change any byte and
// restore stages every byte of every region (no memsets).
struct FilterReach {
  // Per region (manifest order): sorted, apart ranges; a region past the end has none.
  std::vector<std::vector<ByteRange>> ranges;
  // Set: the filter writes this byte over every byte of its ranges whatever they held (the
  // poison), so inside a fill a memset with it does the filter's work on the device.
  std::optional<uint8_t> constant;
  const std::vector<ByteRange>& of(size_t region) const;
};

struct RestorePlanOptions {
  uint64_t piece = 64ull << 20;     // the staging buffer: no copy step is larger
  uint64_t min_fill = 1ull << 20;   // shorter fills ride along in the copy (one copy beats many small calls)
  bool copy_everything = false;     // a restore filter without a reach sees every byte: no memset steps
  // Ranges a filter changes on the host (sorted, apart): never inside a fill step, so the
  // filter sees their bytes.
  const std::vector<ByteRange>* staged = nullptr;
};

// Steps that cover [0, size) in order. A copy step ends on an 8-byte device address (base +
// offset) unless it ends the region, so no pointer word straddles two steps and relocation
// sees every word; a fill step starts and ends on one too (it is trimmed, the bytes trimmed
// off go to the copies beside it).
std::vector<RestoreStep> plan_restore(const std::vector<format::RegionBytes::Segment>& segments, uint64_t base,
                                      uint64_t size, const RestorePlanOptions& o = {});

// A constant filter's ranges of one region, split: those of at least `min_memset` bytes are
// written on the device (`memset`), shorter ones are staged with the bytes around them
// (many tiny memsets cost more calls than one copy of the few bytes between them).
struct ReachSplit {
  std::vector<ByteRange> memset, staged;
};
ReachSplit split_reach(const std::vector<ByteRange>& ranges, uint64_t min_memset = 64ull << 10);

// The parts of `ranges` that lie inside the fill steps of `steps`, as fill steps of
// `value`: memsets issued after the steps (on the same stream), over the fills. Parts in
// copy steps are left to the filter, which sees the staged bytes.
std::vector<RestoreStep> overlay_fills(const std::vector<RestoreStep>& steps, const std::vector<ByteRange>& ranges,
                                       uint8_t value);

// Sorted, overlapping and adjacent ranges merged.
std::vector<ByteRange> merge_ranges(std::vector<ByteRange> ranges);

}  // namespace kerncap::replay
