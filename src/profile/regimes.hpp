#pragma once
// A kernel's regimes: its launches grouped by launch shape (grid, block, cluster, dynamic
// shared memory), each with how many launches it stands for, its share of the kernel's GPU
// time, and the `extract --dispatch` index (for the kernel's exact mangled name) of its first
// launch, so that one capture per regime can be taken in a second run of the application.
//
// Shapes only: two launches of one grid whose scalar parameters differ (a size that does not
// change the grid) are one regime here; the profile records carry no parameters.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "format/profile_records.hpp"

namespace kerncap::profile {

struct Regime {
  std::array<int32_t, 3> grid{}, block{};
  std::array<uint32_t, 3> cluster{};
  int32_t dynamic_shared = 0;
  uint64_t launches = 0;   // launches of this shape
  uint64_t time_ns = 0;    // their GPU time
  double share = 0;        // of the kernel's GPU time (0..1)
  uint64_t dispatch = 0;   // extract --dispatch of its first launch (exact-name match)
  uint64_t first_ns = 0;   // when that launch started (orders regimes as the application met them)
  bool operator==(const Regime&) const = default;
};

struct RegimeSet {
  std::string mangled;
  int64_t pid = 0;                 // the process whose launches these are
  uint64_t launches = 0, time_ns = 0;  // the kernel's, in that process
  uint64_t app_time_ns = 0;        // every kernel's GPU time, in that process
  std::vector<Regime> regimes;     // the kept ones, by share (largest first)
  uint64_t dropped = 0;            // regimes beyond `max`
  uint64_t dropped_launches = 0, dropped_ns = 0;
  uint64_t uncounted = 0;          // launches extract does not count (device-launched, benchmark)
  size_t other_processes = 0;      // processes that also launched the kernel (not used)
};

// The regimes of `mangled` in the first process (in the records' order) that launched it
// from the host, at most `max` (the largest shares; ties: the earlier). Empty `regimes`
// when no process launched it. Sampled records (profile --sample > 1) are refused by the
// caller: their dispatch indices and times are not per launch.
RegimeSet find_regimes(const std::vector<format::ProcessRecords>& processes, const std::string& mangled, size_t max);

}  // namespace kerncap::profile
