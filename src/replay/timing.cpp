#include "replay/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/manifest.hpp"
#include "replay/kernel_clock.hpp"
#include "replay/session.hpp"
#include "replay/spin_kernel.hpp"
#include "replay/state_reset.hpp"

namespace kerncap::replay {

namespace {

template <typename E, size_t N>
E parse_name(const std::string& s, const std::pair<const char*, E> (&names)[N], const char* what) {
  std::string all;
  for (const auto& [name, value] : names) {
    if (s == name) return value;
    all += all.empty() ? name : fmt::format("|{}", name);
  }
  usage_error(fmt::format("{} must be one of {}, not '{}'", what, all, s));
}

template <typename E, size_t N>
std::string name_of(E e, const std::pair<const char*, E> (&names)[N]) {
  for (const auto& [name, value] : names)
    if (value == e) return name;
  return "?";
}

const std::pair<const char*, RestoreMode> kRestoreNames[] = {
    {"written", RestoreMode::Written}, {"full", RestoreMode::Full}, {"none", RestoreMode::None}};
const std::pair<const char*, CacheMode> kCacheNames[] = {
    {"auto", CacheMode::Auto}, {"warm", CacheMode::Warm}, {"cold", CacheMode::Cold}, {"blend", CacheMode::Blend}};
const std::pair<const char*, TimerKind> kTimerNames[] = {{"auto", TimerKind::Auto},
                                                         {"cupti", TimerKind::Cupti},
                                                         {"spin-events", TimerKind::SpinEvents},
                                                         {"events", TimerKind::Events}};

}  // namespace

RestoreMode parse_restore(const std::string& s) { return parse_name(s, kRestoreNames, "restore"); }
CacheMode parse_cache(const std::string& s) { return parse_name(s, kCacheNames, "cache"); }
TimerKind parse_timer(const std::string& s) { return parse_name(s, kTimerNames, "timer"); }
std::string to_string(RestoreMode m) { return name_of(m, kRestoreNames); }
std::string to_string(CacheMode m) { return name_of(m, kCacheNames); }
std::string to_string(TimerKind m) { return name_of(m, kTimerNames); }

TimingOptions timing_options_from_json(const nlohmann::json& o) {
  TimingOptions t;
  if (o.is_null()) return t;
  if (!o.is_object()) input_error("the timing options must be a JSON object");
  auto get = [&](const char* key, auto& out, auto check) {
    if (!o.contains(key) || o[key].is_null()) return false;
    if (!check(o[key])) input_error(fmt::format("timing option '{}' has the wrong type", key));
    out = o[key].template get<std::decay_t<decltype(out)>>();
    return true;
  };
  auto integer = [](const nlohmann::json& v) {
    return v.is_number_integer() && v.get<int64_t>() >= -(1ll << 31) && v.get<int64_t>() < (1ll << 31) &&
           !(v.is_number_unsigned() && v.get<uint64_t>() >= (1ull << 31));
  };
  auto boolean = [](const nlohmann::json& v) { return v.is_boolean(); };
  auto text = [](const nlohmann::json& v) { return v.is_string(); };
  get("warmup", t.warmup, integer);
  get("iterations", t.iterations, integer);
  get("batch", t.batch, integer);
  bool each = false;
  if (get("restore_each", each, boolean) && each) t.restore = RestoreMode::Full;
  std::string s;
  try {
    if (get("restore", s, text)) t.restore = parse_restore(s);
    if (get("cache", s, text)) t.cache = parse_cache(s);
    if (get("timer", s, text)) t.timer = parse_timer(s);
  } catch (const Error& e) {
    input_error(std::string("timing options: ") + e.what());
  }
  return t;
}

CacheChoice choose_cache(std::optional<double> between_ns, uint64_t l2_bytes, double dram_bytes_per_ns) {
  if (!between_ns)
    return {CacheMode::Warm,
            "warm: the capture does not say what the application ran between two launches of this kernel (an "
            "older capture, or one launch of this shape)"};
  const bool known = l2_bytes && dram_bytes_per_ns > 0;
  const double turnover_ns = known ? static_cast<double>(l2_bytes) / dram_bytes_per_ns : 10'000.0;
  const std::string stream =
      known ? fmt::format("the {:.1f} µs the memory takes to stream the L2's {}", turnover_ns / 1e3, human_bytes(l2_bytes))
            : std::string("10 µs (the L2 size or memory bandwidth is unknown)");
  if (*between_ns >= turnover_ns)
    return {CacheMode::Cold,
            fmt::format("cold: the application ran {:.1f} µs of other kernels between two launches of this one "
                        "(median), at least {}: enough to evict its data",
                        *between_ns / 1e3, stream)};
  return {CacheMode::Warm,
          *between_ns > 0
              ? fmt::format("warm: the application ran {:.1f} µs of other kernels between two launches of this one "
                            "(median), less than {}",
                            *between_ns / 1e3, stream)
              : std::string("warm: most of the application's launches of this kernel came right after the one "
                            "before, with no other kernel between (median 0)")};
}

CacheChoice nearer_cache(double in_app_ns, double warm_ns, double cold_ns, const CacheChoice& rule) {
  const bool cold = std::abs(cold_ns - in_app_ns) < std::abs(warm_ns - in_app_ns);
  const std::string rule_said = rule.mode == (cold ? CacheMode::Cold : CacheMode::Warm)
                                    ? "as the other-work rule says"
                                    : fmt::format("where the other-work rule said {}", rule.why.substr(0, rule.why.find(':')));
  return {cold ? CacheMode::Cold : CacheMode::Warm,
          fmt::format("{}: nearer the application's {:.2f} µs of this launch shape (warm {:.2f} µs, cold {:.2f} µs "
                      "over a few launches each), {}",
                      cold ? "cold" : "warm", in_app_ns / 1e3, warm_ns / 1e3, cold_ns / 1e3, rule_said)};
}

bool cache_indifferent(const Stats& warm, const Stats& cold) {
  const double span = cold.median - warm.median;
  return span < 0.05 * warm.median || span < 2 * std::max(warm.stddev, cold.stddev);
}

void check(const TimingOptions& o) {
  if (o.iterations < 1) usage_error("iterations must be at least 1");
  if (o.warmup < 0) usage_error("warmup must be >= 0");
  if (o.iterations > 10'000'000 || o.warmup > 10'000'000) usage_error("at most 10,000,000 iterations");
  if (o.batch < 1 || o.batch > 1024) usage_error("batch must be 1 to 1024 launches");
}

nlohmann::json Timing::to_json() const {
  nlohmann::json j = {{"method", method},
                      {"timer", to_string(options.timer)},
                      {"warmup", options.warmup},
                      {"iterations", options.iterations},
                      {"batch", options.batch},
                      {"restore", to_string(options.restore)},
                      {"restore_each", options.restore == RestoreMode::Full},
                      {"cache", to_string(options.cache)},
                      {"clock", clock_json(clock_before, clock_after)},
                      {"median_ms", stats.median},
                      {"min_ms", stats.min},
                      {"max_ms", stats.max},
                      {"mean_ms", stats.mean},
                      {"stddev_ms", stats.stddev},
                      {"times_ms", ms}};
  if (!method_note.empty()) j["method_note"] = method_note;
  if (kernels_per_launch) j["kernels_per_launch"] = kernels_per_launch;
  if (options.restore == RestoreMode::Written)
    j["reset"] = {{"bytes", reset_bytes},
                  {"ranges", reset_ranges},
                  {"staging", reset_staging},
                  {"never_read_bytes", reset_never_read_bytes}};
  if (options.cache == CacheMode::Cold) j["l2_flush_bytes"] = flush_bytes;
  if (!cache_why.empty()) j["cache_why"] = cache_why;
  j["overhead"] = {{"wall_s", wall_s},         {"setup_s", setup_s}, {"clock_s", clock_s},
                   {"cupti_take_s", cupti_take_s}, {"cupti_flushes", cupti_flushes}, {"waits", waits}};
  return j;
}

std::string Timing::describe() const {
  std::string m = method;
  if (method == kMethodCupti) m += " (kernel time from CUPTI activity records)";
  if (method == kMethodSpinEvents) m += " (events behind a spin kernel)";
  if (method == kMethodEvents) m += " (events around each launch, launch overhead included)";
  if (!method_note.empty()) m += fmt::format("; {}", method_note);
  std::string restore = to_string(options.restore);
  if (options.restore == RestoreMode::Written)
    restore += reset_bytes ? fmt::format(" ({} in {} ranges put back before each launch from a {} copy",
                                         human_bytes(reset_bytes), reset_ranges, reset_staging)
               : reset_never_read_bytes ? std::string(" (nothing put back before each launch")
                                        : std::string(" (the launch changes no captured byte");
  if (options.restore == RestoreMode::Written && reset_never_read_bytes)
    restore += fmt::format("; {} it writes and never reads left as the previous launch wrote them",
                           human_bytes(reset_never_read_bytes));
  if (options.restore == RestoreMode::Written) restore += ")";
  if (options.restore == RestoreMode::Full) restore += " (every captured byte restored before each launch)";
  if (options.restore == RestoreMode::None) restore += " (state carries over between launches)";
  std::string cache = to_string(options.cache);
  if (options.cache == CacheMode::Cold) cache += fmt::format(" (L2 flushed with {} before each launch)", human_bytes(flush_bytes));
  if (!cache_why.empty()) cache += fmt::format("; --cache auto chose {}", cache_why);
  return fmt::format("method: {}\n  cache: {}; restore: {}\n  {}", m, cache, restore,
                     clock_text(clock_before, clock_after));
}

namespace {

constexpr const char* kFirstOnlyNote =
    "the application launched this kernel once with this grid, block and shared memory: its in-app time is a "
    "first launch (cold caches and TLBs, clocks still ramping up), not comparable with a warm replay; capture a "
    "later launch of a kernel the application repeats (--dispatch) for a ratio";
constexpr const char* kOneSampleNote = "the in-app median is one launch: expect noise in the ratio";

std::string launches_text(uint64_t n) { return fmt::format("{} launch{}", n, n == 1 ? "" : "es"); }

}  // namespace

InAppTime in_app_of(const format::Manifest& m) { return {m.in_app_median_ns, m.in_app_samples, m.in_app_launches}; }

nlohmann::json in_app_json(const Timing& t, const InAppTime& a) {
  if (!a.median_ns) return nlohmann::json::object();
  const double app_ms = *a.median_ns / 1e6;
  nlohmann::json j = {{"in_app_median_ms", app_ms},
                      {"in_app_samples", a.samples ? nlohmann::json(a.samples) : nlohmann::json(nullptr)},
                      {"in_app_launches", a.launches ? nlohmann::json(a.launches) : nlohmann::json(nullptr)},
                      {"replay_in_app_ratio", nullptr}};
  if (a.first_only()) j["in_app_note"] = kFirstOnlyNote;
  else if (app_ms > 0) j["replay_in_app_ratio"] = t.stats.median / app_ms;
  if (!a.first_only() && a.samples == 1) j["in_app_note"] = kOneSampleNote;
  return j;
}

std::string in_app_line(const Timing& t, const InAppTime& a) {
  if (!a.median_ns) return "";
  const double app_ms = *a.median_ns / 1e6;
  if (a.first_only())
    return fmt::format("in-app {:.4f} ms (1 launch), replay median {:.4f} ms: no ratio, {}", app_ms, t.stats.median,
                       kFirstOnlyNote);
  const std::string over = a.samples ? " over " + launches_text(a.samples) : std::string();
  std::string line = fmt::format("in-app median {:.4f} ms{}, replay median {:.4f} ms: ratio {}", app_ms, over,
                                 t.stats.median,
                                 app_ms > 0 ? fmt::format("{:.2f}", t.stats.median / app_ms) : std::string("n/a"));
  if (a.samples == 1) line += std::string(" (") + kOneSampleNote + ")";
  return line;
}

namespace {

int device_attribute(CUdevice_attribute a) {
  CUdevice dev = 0;
  int v = 0;
  if (KC_CU_TRY(cuCtxGetDevice(&dev)) != CUDA_SUCCESS || KC_CU_TRY(cuDeviceGetAttribute(&v, a, dev)) != CUDA_SUCCESS)
    return 0;
  return v;
}

// The current device's L2 size and peak memory bandwidth (double data rate: two transfers per
// memory clock over the bus); 0 when the driver does not say.
uint64_t l2_bytes() { return static_cast<uint64_t>(std::max(0, device_attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE))); }
double dram_bytes_per_ns() {
  const double khz = device_attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  const double bits = device_attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  return 2 * khz * 1e3 * (bits / 8) / 1e9;
}

// Writing twice the L2 size before a launch evicts whatever the previous launch left.
class L2Flush {
 public:
  L2Flush() {
    CUdevice dev = 0;
    KC_CU(cuCtxGetDevice(&dev));
    int l2 = 0;
    KC_CU(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
    bytes_ = 2ull * static_cast<uint64_t>(std::max(l2, 1 << 20));
    KC_CU(cuMemAlloc(&buf_, bytes_));
  }
  ~L2Flush() { driver().cuMemFree(buf_); }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  void enqueue(CUstream st) {
    KC_CU(cuMemsetD8Async(buf_, value_++, bytes_, st));
  }
  uint64_t bytes() const { return bytes_; }

 private:
  CUdeviceptr buf_ = 0;
  uint64_t bytes_ = 0;
  unsigned char value_ = 0;
};

struct Events {
  CUevent start = nullptr, stop = nullptr;
  Events() {
    KC_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
    KC_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  }
  ~Events() {
    driver().cuEventDestroy(start);
    driver().cuEventDestroy(stop);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  float elapsed() const {
    float ms = 0;
    KC_CU(cuEventElapsedTime(&ms, start, stop));
    return ms;
  }
};

using Clock = std::chrono::steady_clock;

// CUPTI: the summed GPU durations of the kernels each launch ran. The first launch (warm-up
// or not) runs alone and learns how many kernels one launch runs; when it produced no kernel
// record this returns false with nothing timed, and the caller falls back to events. The
// others are queued `batch` at a time, each behind its own prepare(), and their records split
// by start time (split_launches).
bool time_with_cupti(KernelClock& kc, Session& s, const TimingOptions& o, const LaunchFn& run,
                     const std::function<void()>& prepare, int batch, Timing& t) {
  const int total = o.warmup + o.iterations;
  size_t expect = 0;
  auto keep = [&](int i, const KernelSum& k) {
    if (i < o.warmup) return;
    if (k.kernels == 0)
      device_error(fmt::format("CUPTI recorded no kernel for launch {} of {}; time with --timer spin-events",
                               i - o.warmup + 1, o.iterations));
    t.ms.push_back(static_cast<float>(static_cast<double>(k.ns) / 1e6));
  };
  for (int i = 0; i < total;) {
    const int n = i == 0 ? 1 : std::min(batch, total - i);
    // Taken before the resets: a record whose start is earlier belongs to a launch already
    // waited for (never these, whatever the clock's calibration).
    const uint64_t since = kc.now();
    for (int k = 0; k < n; ++k) {
      prepare();
      run(s.stream());
    }
    s.synchronize();
    ++t.waits;
    if (n == 1) {
      const KernelSum k = kc.take(since, std::max<size_t>(expect, 1));
      if (i == 0) {
        if (k.kernels == 0) return false;
        expect = k.kernels;
      }
      keep(i, k);
    } else {
      const std::vector<KernelSum> per = kc.take_launches(since, expect, static_cast<size_t>(n));
      if (per.empty())
        device_error(fmt::format("CUPTI's kernel records of launches {} to {} do not split into {} kernel(s) per "
                                 "launch; time with batch 1 or --timer spin-events",
                                 i + 1, i + n, expect));
      for (int k = 0; k < n; ++k) keep(i + k, per[static_cast<size_t>(k)]);
    }
    i += n;
  }
  t.kernels_per_launch = static_cast<int>(expect);
  t.method = kMethodCupti;
  return true;
}

// Events: with `spin`, a spin kernel holds the GPU while the CPU queues start, launch and
// stop, for 4x the longest enqueue time seen so far (20 µs to 20 ms). The first launch is
// not counted when there is a later warm-up: it may load the module (lazy loading).
void time_with_events(Session& s, const TimingOptions& o, const LaunchFn& run, const std::function<void()>& prepare,
                      bool spin, Timing& t) {
  std::optional<SpinKernel> spinner;
  if (spin) spinner.emplace();
  Events ev;
  uint64_t enqueue_ns = 25'000;
  bool measured = false;
  auto spin_ns = [&] { return std::clamp<uint64_t>(4 * enqueue_ns, 20'000, 20'000'000); };
  for (int i = 0; i < o.warmup + o.iterations; ++i) {
    prepare();
    if (spinner) spinner->enqueue(s.stream(), spin_ns());
    const auto t0 = Clock::now();
    KC_CU(cuEventRecord(ev.start, s.stream()));
    run(s.stream());
    KC_CU(cuEventRecord(ev.stop, s.stream()));
    const uint64_t took = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
    s.synchronize();
    ++t.waits;
    if (i > 0 || o.warmup < 2) {
      enqueue_ns = measured ? std::max(enqueue_ns, took) : took;
      measured = true;
    }
    if (i >= o.warmup) t.ms.push_back(ev.elapsed());
  }
  t.method = spin ? kMethodSpinEvents : kMethodEvents;
}

}  // namespace

Timing time_launches(Session& s, const TimingOptions& o, const LaunchFn& launch, const StateReset* kept) {
  check(o);
  const auto wall0 = Clock::now();
  const LaunchFn run = launch ? launch : [&s](CUstream) { s.enqueue(); };
  Timing t;
  t.options = o;
  // A caller's launch may run on streams of its own, and a full restore waits for the device
  // itself: both wait after every launch.
  const int batch = launch || o.restore == RestoreMode::Full ? 1 : o.batch;
  t.options.batch = batch;

  std::unique_ptr<StateReset> own;
  const StateReset* reset = nullptr;
  if (o.restore == RestoreMode::Written) {
    if (kept) {
      reset = kept;
    } else {
      if (s.launched_since_restore()) s.restore();
      own = std::make_unique<StateReset>(s);
      reset = own.get();
    }
    t.reset_bytes = reset->bytes(ResetScope::Read);
    t.reset_ranges = reset->ranges(ResetScope::Read);
    t.reset_never_read_bytes = reset->bytes() - reset->bytes(ResetScope::Read);
    t.reset_staging = to_string(reset->place());
  }
  Session::CacheMemo& memo = s.cache_memo();
  if ((o.cache == CacheMode::Auto || o.cache == CacheMode::Blend) && memo.set) {
    t.options.cache = memo.cold ? CacheMode::Cold : CacheMode::Warm;
    t.cache_why = memo.why;
  } else if (o.cache == CacheMode::Auto || o.cache == CacheMode::Blend) {
    CacheChoice c = other_work_rule(s);
    const auto in_app = s.capture().manifest.in_app_median_ns;
    // Measured with the captured image only (the application's time is of that image), once.
    if (in_app && *in_app > 0 && s.active() == Session::Which::Captured) {
      // A few launches each way (this image), the state nearer the application's own time kept.
      TimingOptions probe = o;
      probe.warmup = 1;
      probe.iterations = 5;
      probe.cache = CacheMode::Warm;
      const Timing warm = time_launches(s, probe, launch, reset);
      probe.cache = CacheMode::Cold;
      const Timing cold = time_launches(s, probe, launch, reset);
      if (!warm.ms.empty() && !cold.ms.empty()) {
        const Stats w = statistics(warm.ms), k = statistics(cold.ms);
        if (cache_indifferent(w, k))
          c.why = fmt::format("{}; this launch takes the same time warm ({:.2f} µs) and cold ({:.2f} µs), so the "
                              "application's {:.2f} µs cannot say which state it ran in",
                              c.why, w.median * 1e3, k.median * 1e3, *in_app / 1e3);
        else
          c = nearer_cache(*in_app, w.median * 1e6, k.median * 1e6, c);
        memo.set = true;
        memo.cold = c.mode == CacheMode::Cold;
        memo.why = c.why;
      }
    }
    t.options.cache = c.mode;
    t.cache_why = c.why;
  }
  std::unique_ptr<L2Flush> flush;
  if (t.options.cache == CacheMode::Cold) {
    flush = std::make_unique<L2Flush>();
    t.flush_bytes = flush->bytes();
  }
  // Everything a launch needs before it, queued ahead of the timed interval.
  const std::function<void()> prepare = [&] {
    if (o.restore == RestoreMode::Full) s.restore();
    if (reset) reset->reset(s.stream(), ResetScope::Read);  // what the launch may read; no more
    if (flush) flush->enqueue(s.stream());
  };

  const std::string bus = current_pci_bus_id();
  auto clock0 = Clock::now();
  t.clock_before = recent_sm_clock(bus, kSmClockMaxAge);
  t.clock_s = std::chrono::duration<double>(Clock::now() - clock0).count();
  bool done = false;
  if (o.timer == TimerKind::Auto || o.timer == TimerKind::Cupti) {
    KernelClock kc;
    t.setup_s = std::chrono::duration<double>(Clock::now() - wall0).count();
    if (!kc.ok())
      t.method_note = "CUPTI unavailable: " + kc.why();
    else if (!(done = time_with_cupti(kc, s, o, run, prepare, batch, t)))
      t.method_note = "CUPTI recorded no kernel for the launch";
    t.cupti_take_s = kc.take_seconds();
    t.cupti_flushes = kc.flushes();
    if (!done && o.timer == TimerKind::Cupti)
      device_error(fmt::format("cannot time with CUPTI: {}; use --timer auto or spin-events", t.method_note));
  }
  if (!done) {
    t.options.batch = 1;  // events bracket one launch at a time
    time_with_events(s, o, run, prepare, o.timer != TimerKind::Events, t);
  }
  clock0 = Clock::now();
  t.clock_after = recent_sm_clock(bus, kSmClockMaxAge);
  t.clock_s += std::chrono::duration<double>(Clock::now() - clock0).count();

  // Leave the memory as the timing found it (restored), for a comparison that follows.
  if (reset) {
    reset->reset(s.stream());
    s.synchronize();
  }
  t.stats = statistics(t.ms);
  t.wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
  return t;
}

CacheChoice other_work_rule(Session& s) {
  Session::CacheMemo& memo = s.cache_memo();
  if (!memo.rule_set) {
    const CacheChoice c = choose_cache(s.capture().manifest.in_app_between_ns, l2_bytes(), dram_bytes_per_ns());
    memo.rule_set = true;
    memo.rule_cold = c.mode == CacheMode::Cold;
    memo.rule_why = c.why;
  }
  return {memo.rule_cold ? CacheMode::Cold : CacheMode::Warm, memo.rule_why};
}

}  // namespace kerncap::replay
