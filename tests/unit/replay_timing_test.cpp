// Timing statistics, options, JSON, kernel-record sums and the SM clock without NVML (the
// parts of timing that need no GPU).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "replay/kernel_clock.hpp"
#include "replay/sm_clock.hpp"
#include "replay/spin_kernel.hpp"
#include "replay/speedup.hpp"
#include "replay/timing.hpp"
#include "replay/timing_flags.hpp"

namespace kerncap::replay {
namespace {

TEST(Timing, Statistics) {
  Stats s = statistics({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.stddev, 1.2909944, 1e-6);
  Stats one = statistics({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  EXPECT_DOUBLE_EQ(statistics({}).median, 0);
  EXPECT_DOUBLE_EQ(statistics({5, 1, 9}).median, 5);
}

TEST(Timing, OptionsAreChecked) {
  EXPECT_THROW(check({.warmup = 0, .iterations = 0}), Error);
  EXPECT_THROW(check({.warmup = -1, .iterations = 5}), Error);
  EXPECT_NO_THROW(check({.warmup = 0, .iterations = 1}));
}

TEST(Timing, DefaultsAreStatefulSafeWarmAuto) {
  TimingOptions o;
  EXPECT_EQ(o.restore, RestoreMode::Written);
  EXPECT_EQ(o.cache, CacheMode::Auto);
  EXPECT_EQ(o.timer, TimerKind::Auto);
}

TEST(Timing, NamesRoundTrip) {
  for (auto m : {RestoreMode::Written, RestoreMode::Full, RestoreMode::None}) EXPECT_EQ(parse_restore(to_string(m)), m);
  for (auto m : {CacheMode::Auto, CacheMode::Warm, CacheMode::Cold}) EXPECT_EQ(parse_cache(to_string(m)), m);
  for (auto m : {TimerKind::Auto, TimerKind::Cupti, TimerKind::SpinEvents, TimerKind::Events})
    EXPECT_EQ(parse_timer(to_string(m)), m);
  try {
    parse_cache("lukewarm");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("auto|warm|cold"), std::string::npos) << e.what();
  }
}

TEST(Timing, OptionsFromJson) {
  TimingOptions d = timing_options_from_json(nlohmann::json::object());
  EXPECT_EQ(d.restore, RestoreMode::Written);
  EXPECT_EQ(d.iterations, 20);
  auto o = timing_options_from_json(
      {{"warmup", 1}, {"iterations", 5}, {"cache", "cold"}, {"timer", "events"}, {"restore", "none"}, {"new", 1}});
  EXPECT_EQ(o.warmup, 1);
  EXPECT_EQ(o.iterations, 5);
  EXPECT_EQ(o.cache, CacheMode::Cold);
  EXPECT_EQ(o.timer, TimerKind::Events);
  EXPECT_EQ(o.restore, RestoreMode::None);
  // The older spelling still works; the new key wins when both are given.
  EXPECT_EQ(timing_options_from_json({{"restore_each", true}}).restore, RestoreMode::Full);
  EXPECT_EQ(timing_options_from_json({{"restore_each", false}}).restore, RestoreMode::Written);
  EXPECT_EQ(timing_options_from_json({{"restore_each", true}, {"restore", "written"}}).restore, RestoreMode::Written);
  EXPECT_EQ(timing_options_from_json({{"cache", nullptr}}).cache, CacheMode::Auto);
  EXPECT_EQ(timing_options_from_json({{"cache", "warm"}}).cache, CacheMode::Warm);
  for (const nlohmann::json& bad : {nlohmann::json{{"warmup", "3"}}, nlohmann::json{{"restore_each", 1}},
                                    nlohmann::json{{"cache", "hot"}},
                                    nlohmann::json{{"iterations", 1ll << 40}}, nlohmann::json{{"warmup", 1.5}}, nlohmann::json{{"timer", 2}}, nlohmann::json(3)}) {
    try {
      timing_options_from_json(bad);
      FAIL() << bad.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << bad.dump();
    }
  }
}

TEST(Timing, FlagsParse) {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    TimingFlags f;
    add_timing_flags(&app, f);
    std::vector<const char*> argv = {"replay"};
    for (auto& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
    return f.options();
  };
  TimingOptions d = parse({});
  EXPECT_EQ(d.restore, RestoreMode::Written);
  EXPECT_EQ(d.cache, CacheMode::Auto);
  EXPECT_EQ(d.iterations, 20);
  EXPECT_EQ(parse({"--cache", "warm"}).cache, CacheMode::Warm);
  EXPECT_EQ(parse({"--no-restore"}).restore, RestoreMode::None);
  EXPECT_EQ(parse({"--restore-each"}).restore, RestoreMode::Full);
  TimingOptions c = parse({"--cache", "cold", "--timer", "spin-events", "-n", "7", "--warmup", "0"});
  EXPECT_EQ(c.cache, CacheMode::Cold);
  EXPECT_EQ(c.timer, TimerKind::SpinEvents);
  EXPECT_EQ(c.iterations, 7);
  EXPECT_EQ(c.warmup, 0);
  EXPECT_THROW(parse({"--no-restore", "--restore-each"}), CLI::ParseError);
  EXPECT_THROW(parse({"--cache", "hot"}), CLI::ParseError);
  EXPECT_THROW(parse({"--timer", "nsys"}), CLI::ParseError);
  EXPECT_THROW(parse({"-n", "0"}), Error);
}

TEST(Timing, JsonCarriesEveryStatisticAndMode) {
  Timing t;
  t.ms = {1, 2, 3};
  t.stats = statistics(t.ms);
  t.method = kMethodCupti;
  t.reset_bytes = 4096;
  t.reset_ranges = 2;
  t.reset_staging = "device";
  t.options.cache = CacheMode::Warm;  // as time_launches leaves it
  auto j = t.to_json();
  for (const char* k : {"method", "median_ms", "min_ms", "max_ms", "mean_ms", "stddev_ms", "times_ms", "iterations",
                        "warmup", "restore", "restore_each", "cache", "timer", "clock", "reset"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["median_ms"], 2.0);
  EXPECT_EQ(j["method"], "cupti-activity");
  EXPECT_EQ(j["restore"], "written");
  EXPECT_EQ(j["restore_each"], false);
  EXPECT_EQ(j["cache"], "warm");
  EXPECT_EQ(j["reset"]["bytes"], 4096);
  EXPECT_EQ(j["clock"]["known"], false);
  EXPECT_FALSE(j.contains("l2_flush_bytes"));
  EXPECT_FALSE(j.contains("method_note"));
  EXPECT_FALSE(j.contains("cache_why"));  // asked for, not chosen
  // Where the timing's own wall time went: a profile beside the statistics.
  EXPECT_EQ(j["overhead"]["wall_s"], 0.0);
  t.wall_s = 0.011;
  t.cupti_take_s = 0.002;
  t.cupti_flushes = 13;
  EXPECT_EQ(t.to_json()["overhead"]["cupti_flushes"], 13);
  EXPECT_DOUBLE_EQ(t.to_json()["overhead"]["cupti_take_s"].get<double>(), 0.002);

  t.options.restore = RestoreMode::Full;
  t.options.cache = CacheMode::Cold;
  t.flush_bytes = 100 << 20;
  t.method = kMethodSpinEvents;
  t.method_note = "CUPTI unavailable: x";
  t.clock_before = {.known = true, .mhz = 1980, .max_mhz = 1980};
  t.clock_after = {.known = true, .mhz = 1755, .max_mhz = 1980};
  j = t.to_json();
  EXPECT_EQ(j["restore_each"], true);
  EXPECT_FALSE(j.contains("reset"));
  EXPECT_EQ(j["l2_flush_bytes"], 100 << 20);
  EXPECT_EQ(j["method_note"], "CUPTI unavailable: x");
  EXPECT_EQ(j["clock"]["sm_mhz_after"], 1755);
  const std::string d = t.describe();
  for (const char* k : {"cuda-events+spin", "CUPTI unavailable", "cold", "100.0 MiB", "full", "1755 MHz after"})
    EXPECT_NE(d.find(k), std::string::npos) << k << " in " << d;
}

TEST(Timing, InAppBesideReplay) {
  Timing t;
  t.ms = {0.0042f};
  t.stats = statistics(t.ms);
  EXPECT_TRUE(in_app_json(t, InAppTime{}).empty());
  EXPECT_EQ(in_app_line(t, InAppTime{}), "");
  // An older capture: no counts.
  auto j = in_app_json(t, InAppTime{4000.0, 0, 0});
  EXPECT_DOUBLE_EQ(j["in_app_median_ms"].get<double>(), 0.004);
  EXPECT_NEAR(j["replay_in_app_ratio"].get<double>(), 1.05, 1e-6);
  EXPECT_TRUE(j["in_app_samples"].is_null());
  EXPECT_EQ(in_app_line(t, InAppTime{4000.0, 0, 0}), "in-app median 0.0040 ms, replay median 0.0042 ms: ratio 1.05");
  // Counted: the sample count is printed and carried.
  j = in_app_json(t, InAppTime{4000.0, 12, 13});
  EXPECT_EQ(j["in_app_samples"], 12);
  EXPECT_EQ(j["in_app_launches"], 13);
  EXPECT_FALSE(j.contains("in_app_note"));
  EXPECT_EQ(in_app_line(t, InAppTime{4000.0, 12, 13}),
            "in-app median 0.0040 ms over 12 launches, replay median 0.0042 ms: ratio 1.05");
  EXPECT_TRUE(in_app_json(t, InAppTime{0.0, 3, 4})["replay_in_app_ratio"].is_null());
  EXPECT_NE(in_app_line(t, InAppTime{0.0, 3, 4}).find("n/a"), std::string::npos);
}

TEST(Timing, InAppOfOneFirstLaunchGivesNoRatio) {
  Timing t;
  t.ms = {0.0042f};
  t.stats = statistics(t.ms);
  const InAppTime first{9000.0, 1, 1};
  EXPECT_TRUE(first.first_only());
  const auto j = in_app_json(t, first);
  EXPECT_TRUE(j["replay_in_app_ratio"].is_null());
  EXPECT_EQ(j["in_app_samples"], 1);
  EXPECT_NE(j["in_app_note"].get<std::string>().find("first launch"), std::string::npos);
  const std::string line = in_app_line(t, first);
  EXPECT_NE(line.find("no ratio"), std::string::npos) << line;
  EXPECT_EQ(line.find("ratio 0."), std::string::npos) << line;
  // One warm launch (the first left out): a ratio, with a word of caution.
  const InAppTime one{4000.0, 1, 2};
  EXPECT_FALSE(one.first_only());
  EXPECT_NEAR(in_app_json(t, one)["replay_in_app_ratio"].get<double>(), 1.05, 1e-6);
  EXPECT_NE(in_app_json(t, one)["in_app_note"].get<std::string>().find("one launch"), std::string::npos);
  EXPECT_NE(in_app_line(t, one).find("over 1 launch,"), std::string::npos) << in_app_line(t, one);
}

TEST(Timing, KernelSumsSkipOursStaleAndIncomplete) {
  const std::vector<KernelSpan> spans = {{1000, 1500, false},   // 500
                                         {1600, 1700, false},   // 100
                                         {1500, 9000, true},    // the spin kernel
                                         {100, 400, false},     // before `since`
                                         {2000, 0, false}};     // no end yet
  KernelSum s = sum_kernels(spans, 1000);
  EXPECT_EQ(s.ns, 600u);
  EXPECT_EQ(s.kernels, 2u);
  EXPECT_EQ(sum_kernels({}).kernels, 0u);
  EXPECT_TRUE(is_our_kernel("kerncap_spin"));
  EXPECT_FALSE(is_our_kernel("_Z6kernelPf"));
  EXPECT_FALSE(is_our_kernel(nullptr));
}

TEST(Timing, CacheAutoFollowsWhatTheApplicationRanBetweenLaunches) {
  const uint64_t l2 = 60ull << 20;  // an H200: 60 MiB of L2 at 4.9 TB/s, 12.8 µs to stream it
  const double bw = 4915.2;
  CacheChoice c = choose_cache(std::nullopt, l2, bw);
  EXPECT_EQ(c.mode, CacheMode::Warm);
  EXPECT_NE(c.why.find("does not say"), std::string::npos) << c.why;
  c = choose_cache(0.0, l2, bw);  // a loop of this launch alone
  EXPECT_EQ(c.mode, CacheMode::Warm);
  EXPECT_NE(c.why.find("no other kernel between"), std::string::npos) << c.why;
  c = choose_cache(5'000.0, l2, bw);  // a sort's other passes
  EXPECT_EQ(c.mode, CacheMode::Warm);
  EXPECT_NE(c.why.find("less than the 12.8 µs"), std::string::npos) << c.why;
  c = choose_cache(52'000.0, l2, bw);  // a 12-layer MLP's GEMMs between two layer norms
  EXPECT_EQ(c.mode, CacheMode::Cold);
  EXPECT_NE(c.why.find("52.0 µs of other kernels"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("60.0 MiB"), std::string::npos) << c.why;
  EXPECT_EQ(choose_cache(12'800.0, l2, bw).mode, CacheMode::Cold);  // the boundary: cold
  EXPECT_EQ(choose_cache(9'000.0, 0, 0).mode, CacheMode::Warm);     // unknown device: 10 µs
  EXPECT_EQ(choose_cache(11'000.0, 0, 0).mode, CacheMode::Cold);
  EXPECT_NE(choose_cache(11'000.0, 0, 0).why.find("unknown"), std::string::npos);
  Timing t;
  t.options.cache = CacheMode::Cold;
  t.cache_why = c.why;
  EXPECT_EQ(t.to_json()["cache"], "cold");
  EXPECT_EQ(t.to_json()["cache_why"], c.why);
  EXPECT_NE(t.describe().find("--cache auto chose cold: the application ran"), std::string::npos) << t.describe();
}

TEST(Timing, SpinKernelIsNamedOurs) {
  EXPECT_NE(std::string(spin_ptx()).find(".entry kerncap_spin"), std::string::npos);
  EXPECT_NE(std::string(spin_ptx()).find("%globaltimer"), std::string::npos);
}

TEST(Timing, ClockUnknownWithoutNvml) {
  const SmClock c = read_sm_clock("0000:65:00.0", "libkerncap-no-such-nvml.so.1");
  EXPECT_FALSE(c.known);
  EXPECT_NE(c.why.find("libkerncap-no-such-nvml.so.1"), std::string::npos) << c.why;
  EXPECT_EQ(clock_text(c, c), "clock: unknown (cannot load libkerncap-no-such-nvml.so.1)");
  EXPECT_EQ(clock_json(c, c)["known"], false);
  EXPECT_FALSE(read_sm_clock("").known);
  EXPECT_EQ(clock_text({}, {}), "clock: unknown");
  const SmClock a{.known = true, .mhz = 1410, .max_mhz = 1980};
  EXPECT_EQ(clock_text(a, a), "SM clock 1410 MHz before, 1410 MHz after (max 1980 MHz)");
}

TEST(TimingCache, AutoKeepsTheStateNearerTheApplicationsOwnTime) {
  const kerncap::replay::CacheChoice rule_cold{kerncap::replay::CacheMode::Cold, "cold: the application ran 40.0 µs of other kernels ..."};
  // An activation the kernel before it just wrote: the application ran it hot (12 µs), a cold
  // replay runs 19 µs: warm, against the rule.
  kerncap::replay::CacheChoice c = kerncap::replay::nearer_cache(12'000, 12'300, 19'000, rule_cold);
  EXPECT_EQ(c.mode, kerncap::replay::CacheMode::Warm);
  EXPECT_NE(c.why.find("warm: nearer the application's 12.00 µs"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("where the other-work rule said cold"), std::string::npos) << c.why;
  // Data evicted between launches: cold is nearer, as the rule says.
  c = kerncap::replay::nearer_cache(18'000, 12'300, 19'000, rule_cold);
  EXPECT_EQ(c.mode, kerncap::replay::CacheMode::Cold);
  EXPECT_NE(c.why.find("as the other-work rule says"), std::string::npos) << c.why;
  // A tie keeps warm (the loop-of-one-launch default).
  EXPECT_EQ(kerncap::replay::nearer_cache(15'000, 14'000, 16'000, rule_cold).mode, kerncap::replay::CacheMode::Warm);
}

TEST(TimingCache, ASpeedupTakesBothImagesWhereTheApplicationsStateLies) {
  auto st = [](double ms, double sd = 0.0001) {
    kerncap::Stats s;
    s.median = ms;
    s.stddev = sd;
    return s;
  };
  // The captured image: warm 10 µs, cold 20 µs, the application 12.5 µs: a quarter of the way.
  // The variant: warm 5 µs, cold 13 µs: 7 µs at that point, a speed-up of 12.5 / 7.
  kerncap::replay::CacheBlend b = kerncap::replay::blend_cache(12'500, st(0.010), st(0.020), st(0.005), st(0.013));
  EXPECT_DOUBLE_EQ(b.a, 0.25);
  EXPECT_NEAR(b.captured.median, 0.0125, 1e-12);
  EXPECT_NEAR(b.variant.median, 0.007, 1e-12);
  EXPECT_NE(b.why.find("blend 0.25: the application's 12.50 µs"), std::string::npos) << b.why;
  // Outside the two states: clamped (the application ran hotter than the warm replay).
  b = kerncap::replay::blend_cache(8'000, st(0.010), st(0.020), st(0.005), st(0.013));
  EXPECT_DOUBLE_EQ(b.a, 0.0);
  EXPECT_NEAR(b.variant.median, 0.005, 1e-12);
  b = kerncap::replay::blend_cache(30'000, st(0.010), st(0.020), st(0.005), st(0.013));
  EXPECT_DOUBLE_EQ(b.a, 1.0);
  // A kernel the flush does not slow: warm.
  b = kerncap::replay::blend_cache(12'000, st(0.010), st(0.0099), st(0.005), st(0.006));
  EXPECT_DOUBLE_EQ(b.a, 0.0);
  EXPECT_NEAR(b.captured.median, 0.010, 1e-12);
}

TEST(TimingCache, AKernelTheCacheDoesNotSlowLeavesTheStateToTheRule) {
  auto st = [](double ms, double sd) {
    kerncap::Stats s;
    s.median = ms;
    s.stddev = sd;
    return s;
  };
  using kerncap::replay::cache_indifferent;
  // The H200's compute-bound scaleShift: warm 39.55 µs, cold 39.68 µs, spread 0.16 µs.
  EXPECT_TRUE(cache_indifferent(st(0.03955, 0.00016), st(0.03968, 0.00016)));
  EXPECT_TRUE(cache_indifferent(st(0.010, 0.0001), st(0.0099, 0.0001)));     // cold faster: the same
  EXPECT_TRUE(cache_indifferent(st(0.03941, 0.00005), st(0.04022, 0.00005)));  // 2 %, beyond its noise: still
  EXPECT_FALSE(cache_indifferent(st(0.01027, 0.00023), st(0.01090, 0.00023)));  // 6 %: told apart
  EXPECT_FALSE(cache_indifferent(st(0.02131, 0.0005), st(0.04144, 0.0005)));   // the Llama norm's decode: 94 %
  EXPECT_TRUE(cache_indifferent(st(0.010, 0.002), st(0.011, 0.002)));          // 10 % inside a wide spread
  // blend with the rule: the application's time (halfway, by chance) no longer places the
  // variant halfway between its warm 11.7 µs and cold 16.3 µs; the rule's warm does.
  const kerncap::replay::CacheChoice warm_rule{kerncap::replay::CacheMode::Warm, "warm: most of the application's launches ..."};
  kerncap::replay::CacheBlend b = kerncap::replay::blend_cache(39'615, st(0.03955, 0.00016), st(0.03968, 0.00016),
                                                               st(0.0117, 0.0001), st(0.0163, 0.0001), warm_rule);
  EXPECT_DOUBLE_EQ(b.a, 0.0);
  EXPECT_NEAR(b.variant.median, 0.0117, 1e-12);
  EXPECT_NE(b.why.find("cannot place it; the other-work rule's state taken (warm:"), std::string::npos) << b.why;
  const kerncap::replay::CacheChoice cold_rule{kerncap::replay::CacheMode::Cold, "cold: ..."};
  b = kerncap::replay::blend_cache(39'615, st(0.03955, 0.00016), st(0.03968, 0.00016), st(0.0117, 0.0001),
                                   st(0.0163, 0.0001), cold_rule);
  EXPECT_DOUBLE_EQ(b.a, 1.0);
  // Where warm and cold differ, the application's time decides, whatever the rule.
  b = kerncap::replay::blend_cache(12'500, st(0.010, 0.0001), st(0.020, 0.0001), st(0.005, 0.0001),
                                   st(0.013, 0.0001), cold_rule);
  EXPECT_DOUBLE_EQ(b.a, 0.25);
}

TEST(TimingCache, BlendIsANameOfItsOwn) {
  EXPECT_EQ(kerncap::replay::parse_cache("blend"), kerncap::replay::CacheMode::Blend);
  EXPECT_EQ(kerncap::replay::to_string(kerncap::replay::CacheMode::Blend), "blend");
  const auto t = kerncap::replay::timing_options_from_json({{"cache", "blend"}});
  EXPECT_EQ(t.cache, kerncap::replay::CacheMode::Blend);
}

TEST(Timing, BatchedLaunchesSplitByStartTime) {
  // Three launches of two kernels each, queued together; records arrive in any order, with a
  // helper kernel, a stale record and an incomplete one among them.
  const std::vector<KernelSpan> spans = {{3000, 3100, false}, {1000, 1200, false}, {1300, 1400, false},
                                         {2000, 2050, false}, {2100, 2400, false}, {3200, 3250, false},
                                         {1500, 9000, true},  {100, 400, false},   {5000, 0, false}};
  const std::vector<KernelSum> per = split_launches(spans, 1000, 2, 3);
  ASSERT_EQ(per.size(), 3u);
  EXPECT_EQ(per[0].ns, 300u);
  EXPECT_EQ(per[1].ns, 350u);
  EXPECT_EQ(per[2].ns, 150u);
  for (const KernelSum& k : per) EXPECT_EQ(k.kernels, 2u);
  // A record too few or too many: no launch can be told from the next.
  EXPECT_TRUE(split_launches(spans, 1000, 2, 4).empty());
  EXPECT_TRUE(split_launches(spans, 1000, 4, 1).empty());
  EXPECT_TRUE(split_launches(spans, 1000, 0, 0).empty());
  EXPECT_EQ(split_launches(spans, 1000, 1, 6).size(), 6u);
}

TEST(Timing, BatchIsAnOptionCheckedAndCarried) {
  EXPECT_EQ(TimingOptions{}.batch, 1);  // kerncap replay: one launch per wait unless asked
  EXPECT_EQ(timing_options_from_json({{"batch", 16}}).batch, 16);
  EXPECT_THROW(timing_options_from_json({{"batch", "x"}}), Error);
  TimingOptions o;
  o.batch = 0;
  EXPECT_THROW(check(o), Error);
  o.batch = 1025;
  EXPECT_THROW(check(o), Error);
  o.batch = 1024;
  EXPECT_NO_THROW(check(o));
  Timing t;
  t.options.batch = 8;
  t.waits = 3;
  t.clock_s = 0.001;
  const auto j = t.to_json();
  EXPECT_EQ(j["batch"], 8);
  EXPECT_EQ(j["overhead"]["waits"], 3);
  EXPECT_DOUBLE_EQ(j["overhead"]["clock_s"].get<double>(), 0.001);
}

TEST(Timing, RecentClockIsReadOncePerAge) {
  // Without NVML the clock is unknown, and so is the reading recent_sm_clock hands out again.
  const char* lib = "libkerncap-no-such-nvml-2.so.1";
  const SmClock first = recent_sm_clock("0000:65:00.0", 10.0, lib);
  EXPECT_FALSE(first.known);
  EXPECT_EQ(first.age_s, 0.0);
  const SmClock again = recent_sm_clock("0000:65:00.0", 10.0, lib);
  EXPECT_FALSE(again.known);
  EXPECT_EQ(again.why, first.why);
  EXPECT_GE(again.age_s, 0.0);
  EXPECT_LT(again.age_s, 10.0);
  EXPECT_EQ(recent_sm_clock("0000:65:00.0", 0.0, lib).age_s, 0.0);  // too old: read again
  // A known clock's ages go into the JSON beside the readings.
  const SmClock a{.known = true, .mhz = 1980, .max_mhz = 1980, .age_s = 0.25};
  const auto j = clock_json(a, a);
  EXPECT_DOUBLE_EQ(j["age_s_before"].get<double>(), 0.25);
  EXPECT_EQ(j["sm_mhz_after"], 1980);
}

}  // namespace
}  // namespace kerncap::replay
