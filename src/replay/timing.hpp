#pragma once
// Timing a launch: the one implementation behind `kerncap replay`, kc_time, baselines and
// every reproducer. What the numbers mean:
//   * kernel time only: CUPTI activity records give each kernel's GPU start/end, summed over
//     the kernels one launch (or the caller's launch callback) ran; without CUPTI, CUDA events
//     bracket the launch behind a short spin kernel, so the GPU reaches the start event only
//     after the CPU has queued the launch and the stop event (no launch overhead inside);
//   * stateful-safe by default: the bytes a launch changes are put back before every launch,
//     warm-up included, outside the timed interval (state_reset.hpp);
//   * the L2 as the application left it: warm, or cold (a buffer of twice the L2 size written
//     before each launch) when the capture says the application ran enough other kernels
//     between two launches of this one to evict its data (--cache auto, choose_cache);
//   * the SM clock before and after, so throttling shows (sm_clock.hpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <cuda.h>
#include <nlohmann/json.hpp>

#include "common/statistics.hpp"
#include "replay/sm_clock.hpp"

namespace kerncap::format {
struct Manifest;
}

namespace kerncap::replay {

class Session;

// What the memory looks like before each launch.
//   written: the bytes a launch changes go back to their restored state (default)
//   full:    every captured byte is restored from the capture files (slow; also undoes
//            changes a launch makes outside what the capture and footprint know of)
//   none:    state carries over from launch to launch (what --no-restore asks for)
enum class RestoreMode { Written, Full, None };
// warm: L2 holds whatever the previous launch left (a loop of this launch alone); cold: L2
// flushed before each launch, as Nsight Compute does by default; auto (default): whichever
// the application's launches saw (choose_cache), resolved when timing starts.
// blend (a speed-up only): each image timed warm and cold and taken where the application's
// state lies between them (blend_cache); a single image's timing treats it as auto.
enum class CacheMode { Auto, Warm, Cold, Blend };
// auto: CUPTI when it can be enabled, else spin-events; events: plain events around each
// launch (launch overhead included; the old method, kept for comparisons).
enum class TimerKind { Auto, Cupti, SpinEvents, Events };

struct TimingOptions {
  int warmup = 3;
  int iterations = 20;
  RestoreMode restore = RestoreMode::Written;
  CacheMode cache = CacheMode::Auto;
  TimerKind timer = TimerKind::Auto;
  // CUPTI timing of the session's own kernel: launches queued (each behind its reset and L2
  // flush, as one at a time) before the CPU waits for them and reads their records; 1 waits
  // after every launch. The kernel times are the GPU's either way (start to end of each
  // kernel); a batch saves the wait, the record flush and the CPU's turn-around per launch
  // (about 0.3 ms each on an H200 with CUPTI's records on), and the GPU runs the launches back
  // to back instead of idling between them. The first launch always runs alone (it learns
  // how many kernels a launch runs); a caller's launch, restore "full" and the events timers
  // wait after every launch.
  int batch = 1;
};

// What --cache auto picks (pure). `between_ns`: the capture's in_app_between_ns, the median GPU
// time of the other kernels the application ran between two launches of this one (absent:
// an older capture, a kernel launched once). Cold when that is at least the time the memory
// takes to stream the L2's size (`l2_bytes` at `dram_bytes_per_ns`; 10 µs when either is
// unknown): enough other work to have evicted this kernel's data, as on an H200 where short
// kernels between 256 MiB writes or in a 12-layer MLP replayed warm at 0.52-0.89 of their in-app
// time and cold at 0.96-1.15. Warm otherwise: a loop of this launch alone, where warm replays
// matched within ±3 % and cold ones ran up to 2x slower. `why` says which and why.
struct CacheChoice {
  CacheMode mode = CacheMode::Warm;
  std::string why;
};
CacheChoice choose_cache(std::optional<double> between_ns, uint64_t l2_bytes, double dram_bytes_per_ns);

// What --cache auto picks when the capture also knows the application's own time of this
// launch shape (in_app_median_ns) and a few launches were timed each way (pure): the state
// whose median is nearer to it. The rule above looks only at how much other work ran between
// two launches; it cannot see that this kernel's input was just written by the kernel before
// it (an activation in a model: hot in L2 however much ran before), where a cold replay times
// a slower kernel than the application ran and exaggerates what a variant saves (an RMSNorm in
// a Llama decoder on an H200: cold replay x1.56, the application x1.26). `rule` is the rule's
// choice, said beside the measured one.
CacheChoice nearer_cache(double in_app_ns, double warm_ns, double cold_ns, const CacheChoice& rule);

// Pure: the launch takes (nearly) the same time warm and cold: the cold median less than 5 %
// above the warm one, or less than two standard deviations (the larger of the two). Then the
// application's own time of the launch cannot say which L2 state it ran in (a compute-bound
// kernel: the application's time differs from a replay's by a few percent for other reasons,
// clocks among them), and --cache auto and a speed-up's blend take the other-work rule's
// state instead. On the H200 a compute-bound kernel (warm 39.41 µs, cold 40.22 µs, in the
// application 39.68 µs) put a memory-bound variant a third of the way from its warm 11.65 µs
// to its cold 16.02 µs, where the application ran it in 11.65 µs, as the rule (warm) says.
bool cache_indifferent(const Stats& warm, const Stats& cold);

// The other-work rule (choose_cache) for the session's capture, on its device; memoised in the
// session.
CacheChoice other_work_rule(Session& s);

// Names on the command line and in kc_time's options; Error(Usage) for anything else.
RestoreMode parse_restore(const std::string& s);
CacheMode parse_cache(const std::string& s);
TimerKind parse_timer(const std::string& s);
std::string to_string(RestoreMode m);
std::string to_string(CacheMode m);
std::string to_string(TimerKind m);

// kc_time's options object: warmup, iterations, restore ("written"|"full"|"none"),
// restore_each (the older spelling: true = "full"; with restore given, restore wins),
// cache ("auto"|"warm"|"cold"), timer ("auto"|"cupti"|"spin-events"|"events"), batch. Unknown keys are
// ignored (older and newer bindings share the library); wrong types are Error(Input).
TimingOptions timing_options_from_json(const nlohmann::json& o);

// Pure statistics of a sample (common/statistics.hpp).
using ::kerncap::Stats;
using ::kerncap::statistics;

// The result's "method" for each way of measuring.
inline constexpr const char* kMethodCupti = "cupti-activity";
inline constexpr const char* kMethodSpinEvents = "cuda-events+spin";
inline constexpr const char* kMethodEvents = "cuda-events";

struct Timing {
  std::string method = kMethodEvents;
  std::string method_note;  // why CUPTI was not used, when auto fell back
  TimingOptions options;
  std::vector<float> ms;
  Stats stats;
  int kernels_per_launch = 0;  // CUPTI: kernels one launch ran (0: not counted)
  uint64_t reset_bytes = 0;    // restore "written": bytes put back before each launch
  uint64_t reset_ranges = 0;
  // restore "written": bytes the launch changes but the footprint saw it never load, left as
  // the previous launch wrote them (state_reset.hpp, read_parts)
  uint64_t reset_never_read_bytes = 0;
  std::string reset_staging;   // "device" or "pinned host"
  uint64_t flush_bytes = 0;    // cache "cold": bytes written to flush L2
  std::string cache_why;       // cache "auto": what it chose (options.cache) and why
  SmClock clock_before, clock_after;
  // Where the timing's wall time went (a profile, not a measurement of the kernel): all of
  // it, inside CUPTI's flushes (KernelClock::take) and how many flushes.
  double wall_s = 0, cupti_take_s = 0;
  double setup_s = 0;  // before the first launch: the reset, clocks, CUPTI's records enabled
  double clock_s = 0;  // of wall_s, reading the SM clock (before and after)
  uint64_t cupti_flushes = 0;
  uint64_t waits = 0;  // times the CPU waited for launches (CUPTI: 1 + launches / batch)
  nlohmann::json to_json() const;
  // "method: cupti-activity; cache: warm; restore: written (4.0 KiB in 2 ranges, device copy);
  //  SM clock 1980 MHz before, 1980 MHz after (max 1980)": the lines replay prints.
  // options.cache is warm or cold once timed (auto resolved; cache_why says why).
  std::string describe() const;
};

// The capture's in-app time (the manifest's in_app_*): the median of the application's
// launches of the kernel with the captured shape, how many launches it is over, and how many
// of that shape there were (1: the one launch was the first, cold; 0: unknown, an older capture).
struct InAppTime {
  std::optional<double> median_ns;
  uint64_t samples = 0;
  uint64_t launches = 0;
  // The in-app time is one first launch: cold caches and TLBs, clocks still ramping up, so
  // a ratio to the warm replay would mislead.
  bool first_only() const { return launches == 1; }
};
// The manifest's in_app_* fields.
InAppTime in_app_of(const format::Manifest& m);
// Beside the replay's median: {"in_app_median_ms", "in_app_samples", "in_app_launches",
// "replay_in_app_ratio", "in_app_note"} (ratio = replay median / in-app median; null when the
// in-app time is 0 or only a first launch, with the note saying why), or {} without one.
nlohmann::json in_app_json(const Timing& t, const InAppTime& a);
// "in-app median 0.0041 ms over 12 launches, replay median 0.0042 ms: ratio 1.02", a line
// saying why there is no ratio, or "" without an in-app time.
std::string in_app_line(const Timing& t, const InAppTime& a);

// Checks the options (Error(Usage) on iterations < 1, warmup < 0 or batch outside 1..1024).
void check(const TimingOptions& o);

// `launch` enqueues one launch on the given stream; empty = the session's own kernel.
// With restore "written", the bytes a launch changes are saved when timing starts (the
// session is restored first if its kernel ran since the last restore; a caller's launch
// callback should restore before timing) and put back when timing ends.
// `kept`: with restore "written", a StateReset the caller took and keeps across timings (the
// evaluation loop); the memory must hold its saved state already. Null: one is taken now.
using LaunchFn = std::function<void(CUstream)>;
class StateReset;
Timing time_launches(Session& s, const TimingOptions& o, const LaunchFn& launch = {}, const StateReset* kept = nullptr);

}  // namespace kerncap::replay
