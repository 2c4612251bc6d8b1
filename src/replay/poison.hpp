#pragma once
// Strong validation: before the replay, every byte the launch writes and never reads (from
// the measured footprint; RegionFootprint::never_read says why not "before writing") is
// overwritten with a poison pattern. The application's
// result still holds the real values there, so a replay that skips a write — a no-op, a
// missing tail block, a stale output — cannot pass, even when the application's launch
// rewrote bytes that were already equal.
#include <cstdint>
#include <utility>
#include <vector>

#include "format/footprint.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

struct Verdict;

// Per region (manifest order): the write-only byte runs [offset, offset + count), sorted.
struct PoisonPlan {
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> runs;
  uint64_t bytes = 0;           // write-only bytes, all regions
  uint64_t written_bytes = 0;   // bytes the launch writes, all regions
  uint64_t written_regions = 0;
  // Of `bytes`, those in regions where probing proved writes the sanitizer cannot see (TMA
  // stores, reached through the parameters, device arrays of pointers or tensor maps).
  uint64_t probed_bytes = 0, probed_regions = 0;
};

// Error(Input) when the footprint does not describe this capture's regions.
PoisonPlan plan_poison(const format::Footprint& f, const format::Manifest& m);

// Fills the plan's bytes of one staged piece of region `index` at `offset` with `pattern`.
void apply_poison(const PoisonPlan& p, size_t index, uint64_t offset, uint8_t* data, uint64_t n, uint8_t pattern);

// Records in a verdict that its replay ran on poisoned bytes (what the PASS line reports).
void mark_strong(Verdict& v, const PoisonPlan& p);

// The plan's runs as byte ranges per region (a restore filter's reach, restore_plan.hpp).
std::vector<std::vector<ByteRange>> poison_ranges(const PoisonPlan& p);

// Makes every restore() of `s` poison the plan's bytes.
void poison_restores(Session& s, const PoisonPlan& p, uint8_t pattern = 0xA5);

}  // namespace kerncap::replay
