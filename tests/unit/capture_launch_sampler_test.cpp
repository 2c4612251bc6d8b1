// Profile mode's sampled timing (LaunchSampler), driven with fake launches: every launch is
// counted into runs in launch order, a handle's name is looked up once, the records are
// switched on and off at the window edges, and a graph launch ends the sampling. No GPU.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "capture/launch_sampler.hpp"
#include "format/profile_cupti.hpp"

using namespace kerncap::capture;
using kerncap::format::kSampleExactLaunches;
using kerncap::format::kSampleWindow;
using kerncap::format::LaunchRun;

namespace {

struct Names {
  std::map<std::string, uint32_t> ids;
  int interned = 0, resolved = 0;
};
uint32_t intern(void* user, std::string_view name) {
  auto* n = static_cast<Names*>(user);
  ++n->interned;
  return n->ids.try_emplace(std::string(name), static_cast<uint32_t>(n->ids.size())).first->second;
}
Names* g_names = nullptr;
std::string resolve(const void*) {
  ++g_names->resolved;
  return "resolved_kernel";
}

const void* const kA = reinterpret_cast<const void*>(0xa);
const void* const kB = reinterpret_cast<const void*>(0xb);
const void* const kC = reinterpret_cast<const void*>(0xc);

}  // namespace

TEST(CaptureLaunchSampler, CountsEveryLaunchIntoRunsAndLooksNamesUpOncePerHandle) {
  Names n;
  g_names = &n;
  LaunchSampler s(10, &intern, &resolve, &n);
  uint32_t corr = 1;
  for (int i = 0; i < 5; ++i) s.on_launch(kA, nullptr, "a", corr++, false);
  s.on_launch(kB, nullptr, nullptr, corr++, false);  // no name from CUPTI: the driver is asked
  s.on_launch(kB, nullptr, nullptr, corr++, false);
  s.on_launch(kA, nullptr, "a", corr++, true);  // a benchmark launch: a run of its own
  s.on_launch(kA, nullptr, "a", corr++, false);
  EXPECT_EQ(n.interned, 2);  // once per handle
  EXPECT_EQ(n.resolved, 1);
  EXPECT_EQ(s.launches(), 9u);
  const auto runs = s.take_runs(true);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0], (LaunchRun{0, 5, 1, 5, false}));
  EXPECT_EQ(runs[1], (LaunchRun{1, 2, 6, 7, false}));
  EXPECT_EQ(runs[2], (LaunchRun{0, 1, 8, 8, true}));
  EXPECT_EQ(runs[3], (LaunchRun{0, 1, 9, 9, false}));
  EXPECT_TRUE(s.take_runs(true).empty());
}

TEST(CaptureLaunchSampler, TakingRunsKeepsTheOpenOne) {
  Names n;
  LaunchSampler s(10, &intern, nullptr, &n);
  s.on_launch(kA, nullptr, "a", 1, false);
  s.on_launch(kB, nullptr, "b", 2, false);
  size_t pending = 0;
  s.on_launch(kB, nullptr, "b", 3, false, &pending);
  EXPECT_EQ(pending, 2u);
  auto done = s.take_runs(false);
  ASSERT_EQ(done.size(), 1u);  // b's run may still grow
  EXPECT_EQ(done[0].count, 1u);
  s.on_launch(kB, nullptr, "b", 4, false);
  auto rest = s.take_runs(true);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0], (LaunchRun{1, 3, 2, 4, false}));
  // Another context is another handle (the same function loaded twice).
  s.on_launch(kB, kC, "b", 5, false);
  EXPECT_EQ(n.interned, 3);
}

TEST(CaptureLaunchSampler, WindowsAfterTheExactLaunches) {
  const uint32_t period = 4;
  for (uint64_t i = 0; i < kSampleExactLaunches; i += 997) EXPECT_TRUE(LaunchSampler::timed(i, period));
  const uint64_t e = kSampleExactLaunches;
  // The exact launches stand in for the first window: the next ends the first cycle.
  EXPECT_FALSE(LaunchSampler::timed(e, period));
  EXPECT_FALSE(LaunchSampler::timed(e + (period - 1) * kSampleWindow - 1, period));
  EXPECT_TRUE(LaunchSampler::timed(e + (period - 1) * kSampleWindow, period));
  EXPECT_TRUE(LaunchSampler::timed(e + period * kSampleWindow - 1, period));
  EXPECT_FALSE(LaunchSampler::timed(e + period * kSampleWindow, period));
  EXPECT_TRUE(LaunchSampler::timed(e + (2 * period - 1) * kSampleWindow, period));
  // One launch in `period` is timed over a long run.
  uint64_t timed = 0;
  for (uint64_t i = e; i < e + 100 * period * kSampleWindow; ++i) timed += LaunchSampler::timed(i, period);
  EXPECT_EQ(timed, 100 * kSampleWindow);
}

TEST(CaptureLaunchSampler, SwitchesTheRecordsAtTheWindowEdgesOnly) {
  Names n;
  const uint32_t period = 3;
  LaunchSampler s(period, &intern, nullptr, &n);
  EXPECT_TRUE(s.records_wanted());
  std::vector<std::pair<uint64_t, LaunchSampler::Records>> switches;
  const uint64_t total = kSampleExactLaunches + 2 * period * kSampleWindow;
  for (uint64_t i = 0; i < total; ++i) {
    const auto r = s.on_launch(kA, nullptr, "a", static_cast<uint32_t>(i + 1), false);
    if (r != LaunchSampler::Records::Keep) switches.emplace_back(i, r);
    EXPECT_EQ(s.records_wanted(), LaunchSampler::timed(i, period)) << i;
  }
  const uint64_t e = kSampleExactLaunches;
  // Off after the exact launches; on for the last window of each cycle.
  ASSERT_EQ(switches.size(), 4u);
  EXPECT_EQ(switches[0], std::make_pair(e, LaunchSampler::Records::Off));
  EXPECT_EQ(switches[1], std::make_pair(e + (period - 1) * kSampleWindow, LaunchSampler::Records::On));
  EXPECT_EQ(switches[2], std::make_pair(e + period * kSampleWindow, LaunchSampler::Records::Off));
  EXPECT_EQ(switches[3], std::make_pair(e + (2 * period - 1) * kSampleWindow, LaunchSampler::Records::On));
  const auto runs = s.take_runs(true);
  ASSERT_EQ(runs.size(), 1u);  // one kernel: one run, however many launches
  EXPECT_EQ(runs[0].count, total);
}

TEST(CaptureLaunchSampler, AGraphLaunchEndsTheSampling) {
  Names n;
  LaunchSampler s(2, &intern, nullptr, &n);
  uint32_t corr = 1;
  const uint64_t before = kSampleExactLaunches + 1;
  for (uint64_t i = 0; i < before; ++i) s.on_launch(kA, nullptr, "a", corr++, false);
  EXPECT_FALSE(s.records_wanted());  // between windows
  EXPECT_EQ(s.on_graph_launch(), LaunchSampler::Records::On);
  EXPECT_FALSE(s.sampling());
  for (uint64_t i = 0; i < 3 * kSampleWindow; ++i)
    EXPECT_EQ(s.on_launch(kA, nullptr, "a", corr++, false), LaunchSampler::Records::Keep);
  EXPECT_TRUE(s.records_wanted());  // on for good: the graph's kernels are known only from records
  const auto runs = s.take_runs(true);
  ASSERT_EQ(runs.size(), 2u);  // the graph launch split the run
  EXPECT_EQ(runs[0].count, before);
  EXPECT_EQ(runs[1].count, 3 * kSampleWindow);
}

TEST(CaptureLaunchSampler, UnloadingForgetsTheHandles) {
  Names n;
  LaunchSampler s(2, &intern, nullptr, &n);
  s.on_launch(kA, nullptr, "a", 1, false);
  s.forget_handles();
  s.on_launch(kA, nullptr, "other", 2, false);  // a new function got the same handle
  const auto runs = s.take_runs(true);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_NE(runs[0].name_id, runs[1].name_id);
}

TEST(CaptureLaunchSampler, CountsOpenStreamCaptures) {
  Names n;
  LaunchSampler s(2, &intern, nullptr, &n);
  EXPECT_FALSE(s.captures_open());  // the launch path asks the driver nothing
  s.on_capture_end();               // an end whose begin came before profiling: stays at none
  EXPECT_FALSE(s.captures_open());
  s.on_capture_begin();
  s.on_capture_begin();
  EXPECT_TRUE(s.captures_open());
  s.on_capture_end();
  EXPECT_TRUE(s.captures_open());  // one of two still open
  s.on_capture_end();
  EXPECT_FALSE(s.captures_open());
}
