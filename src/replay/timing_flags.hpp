#pragma once
// The timing flags `kerncap replay`, `kerncap baseline` and `kerncap-replay` share
// (header-only: the engine library itself does not depend on CLI11).
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "common/error.hpp"
#include "replay/timing.hpp"

namespace kerncap::replay {

struct TimingFlags {
  int warmup = 3;
  int iterations = 20;
  bool no_restore = false;
  bool restore_each = false;
  std::string cache = "auto";
  std::string timer = "auto";
  // The options these flags ask for (Error(Usage) on a bad name or both restore flags).
  TimingOptions options() const {
    if (no_restore && restore_each) usage_error("--no-restore and --restore-each exclude each other");
    TimingOptions o;
    o.warmup = warmup;
    o.iterations = iterations;
    o.restore = no_restore ? RestoreMode::None : restore_each ? RestoreMode::Full : RestoreMode::Written;
    o.cache = parse_cache(cache);
    o.timer = parse_timer(timer);
    check(o);
    return o;
  }
};

inline constexpr const char* kTimingHelp =
    "Timing: kernel time only. CUPTI activity records give each kernel's GPU start and end (summed over\n"
    "the kernels one launch runs); without CUPTI, CUDA events bracket the launch behind a short spin\n"
    "kernel so CPU enqueue time stays outside (the output's method says which). Before every launch,\n"
    "warm-up included and outside the timed interval, the bytes a launch changes (the capture's AFTER\n"
    "runs and the footprint's written bytes) are put back from a copy taken after the first restore:\n"
    "kernels that consume their inputs (counters, in-place updates) see the same memory every time.\n"
    "--restore-each restores every captured byte from the capture files instead (slow; also undoes\n"
    "writes the capture and footprint do not know of); --no-restore lets state carry over.\n"
    "--cache auto (default) times with the L2 as the application's launches found it: cold (a buffer\n"
    "of twice the L2 size written before each launch, as Nsight Compute does) when the capture says the\n"
    "application ran enough other kernels between two launches of this one to stream the L2's size,\n"
    "else warm (as the previous launch left it: a loop of this launch alone); --cache warm|cold picks\n"
    "one. The SM clock is printed before and after (NVML), so throttling shows.";

inline void add_timing_flags(CLI::App* cmd, TimingFlags& f, int default_iterations = 20) {
  f.iterations = default_iterations;
  cmd->add_option("-n,--iterations", f.iterations, "Timed launches")->default_val(default_iterations);
  cmd->add_option("--warmup", f.warmup, "Untimed launches first")->default_val(3);
  auto* none = cmd->add_flag("--no-restore", f.no_restore,
                             "Let memory changes carry over between launches (default: put back the bytes a "
                             "launch changes before each launch)");
  auto* each = cmd->add_flag("--restore-each", f.restore_each,
                             "Restore every captured byte from the capture files before each launch");
  none->excludes(each);
  cmd->add_option("--cache", f.cache,
                  "auto (default: as the application's launches saw it, from the capture), warm (L2 as the "
                  "previous launch left it) or cold (L2 flushed before each launch)")
      ->check(CLI::IsMember({"auto", "warm", "cold"}))
      ->default_val("auto");
  cmd->add_option("--timer", f.timer,
                  "auto (CUPTI, else spin-events), cupti, spin-events, or events (plain events around each "
                  "launch, launch overhead included)")
      ->check(CLI::IsMember({"auto", "cupti", "spin-events", "events"}))
      ->default_val("auto");
}

}  // namespace kerncap::replay
