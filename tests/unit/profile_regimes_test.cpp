// A kernel's launches grouped into regimes (profile/regimes.hpp), from hand-made records:
// shapes, counts, time shares, the extract --dispatch of each regime's first launch, and
// what is left out (device launches, benchmarks, other kernels, regimes beyond max).
#include <gtest/gtest.h>

#include "profile/regimes.hpp"

using kerncap::format::KernelRecord;
using kerncap::format::ProcessRecords;
using namespace kerncap::profile;

namespace {

KernelRecord launch(uint32_t name, uint32_t corr, int32_t grid, uint64_t ns, int32_t smem = 0) {
  KernelRecord k;
  k.name_id = name;
  k.correlation = corr;
  k.start_ns = 1000 * corr;
  k.end_ns = k.start_ns + ns;
  k.grid = {grid, 1, 1};
  k.block = {256, 1, 1};
  k.dynamic_shared = smem;
  return k;
}

ProcessRecords process(int64_t pid) {
  ProcessRecords p;
  p.info.pid = pid;
  p.names = {"_Z4normPfi", "_Z5otherv"};
  return p;
}

}  // namespace

TEST(ProfileRegimes, GroupsByShapeWithSharesAndFirstDispatch) {
  ProcessRecords p = process(7);
  // Records arrive out of launch order (CUPTI flushes by buffer): correlation orders them.
  p.kernels = {launch(0, 5, 8, 100), launch(0, 1, 4096, 300), launch(1, 2, 1, 50), launch(0, 3, 8, 100),
               launch(0, 4, 4096, 300), launch(0, 6, 8, 100, 1024)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  EXPECT_EQ(s.pid, 7);
  EXPECT_EQ(s.launches, 5u);
  EXPECT_EQ(s.time_ns, 900u);
  EXPECT_EQ(s.app_time_ns, 950u);
  ASSERT_EQ(s.regimes.size(), 3u);
  // Largest share first: grid 4096 (600 ns), grid 8 (200 ns), grid 8 with shared memory (100 ns).
  EXPECT_EQ(s.regimes[0].grid[0], 4096);
  EXPECT_EQ(s.regimes[0].launches, 2u);
  EXPECT_EQ(s.regimes[0].dispatch, 0u);  // the kernel's first launch (correlation 1)
  EXPECT_NEAR(s.regimes[0].share, 600.0 / 900.0, 1e-12);
  EXPECT_EQ(s.regimes[1].grid[0], 8);
  EXPECT_EQ(s.regimes[1].dynamic_shared, 0);
  EXPECT_EQ(s.regimes[1].dispatch, 1u);  // correlation 3: the other kernel's launch is not counted
  EXPECT_EQ(s.regimes[1].launches, 2u);
  EXPECT_EQ(s.regimes[2].dynamic_shared, 1024);
  EXPECT_EQ(s.regimes[2].dispatch, 4u);
  EXPECT_EQ(s.dropped, 0u);
}

TEST(ProfileRegimes, DeviceLaunchesAndBenchmarksAreNotCounted) {
  ProcessRecords p = process(1);
  KernelRecord dev = launch(0, 1, 16, 500);
  dev.device_launched = true;
  KernelRecord bench = launch(0, 2, 16, 500);
  bench.benchmark = true;
  p.kernels = {dev, bench, launch(0, 3, 32, 10), launch(0, 4, 16, 20)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  EXPECT_EQ(s.uncounted, 2u);
  ASSERT_EQ(s.regimes.size(), 2u);
  EXPECT_EQ(s.regimes[0].grid[0], 16);
  EXPECT_EQ(s.regimes[0].dispatch, 1u);  // extract counts neither the device nor the benchmark launch
  EXPECT_EQ(s.regimes[1].dispatch, 0u);
}

TEST(ProfileRegimes, AtMostMaxTheRestCounted) {
  ProcessRecords p = process(1);
  for (uint32_t i = 0; i < 5; ++i) p.kernels.push_back(launch(0, i + 1, static_cast<int32_t>(i + 1), 100 * (i + 1)));
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 2);
  ASSERT_EQ(s.regimes.size(), 2u);
  EXPECT_EQ(s.regimes[0].grid[0], 5);
  EXPECT_EQ(s.regimes[1].grid[0], 4);
  EXPECT_EQ(s.dropped, 3u);
  EXPECT_EQ(s.dropped_launches, 3u);
  EXPECT_EQ(s.dropped_ns, 600u);
}

TEST(ProfileRegimes, TheFirstProcessThatLaunchedItOthersCounted) {
  ProcessRecords a = process(1);
  a.kernels = {launch(1, 1, 1, 5)};  // only the other kernel
  ProcessRecords b = process(2);
  b.kernels = {launch(0, 1, 2, 5)};
  ProcessRecords c = process(3);
  c.kernels = {launch(0, 1, 3, 5)};
  const RegimeSet s = find_regimes({a, b, c}, "_Z4normPfi", 8);
  EXPECT_EQ(s.pid, 2);
  EXPECT_EQ(s.other_processes, 1u);
  ASSERT_EQ(s.regimes.size(), 1u);
  EXPECT_EQ(s.regimes[0].grid[0], 2);
  EXPECT_TRUE(find_regimes({a}, "_Z4normPfi", 8).regimes.empty());
  EXPECT_TRUE(find_regimes({b}, "_Z4norm", 8).regimes.empty());  // an exact name, not a substring
}
