// The in-app time kept from kernel records (no GPU, no CUPTI): grouped by kernel and launch
// shape, the first launch of a shape left out when there are others.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "capture/in_app.hpp"

namespace kerncap::capture {
namespace {

LaunchShape grid(uint32_t x, uint32_t block = 256, uint32_t smem = 0) { return {{x, 1, 1}, {block, 1, 1}, smem}; }

TEST(CaptureInApp, MedianOfTheSameKernelAndShapeAfterTheFirst) {
  InAppTimes t;
  const std::string a = "_Z1av", b = "_Z1bv";
  const char* a_copy = "_Z1av";  // another address, same text: the same kernel
  t.add(a.c_str(), grid(64), 50000);  // the first launch of the shape: cold, left out
  t.add(a.c_str(), grid(64), 4000);
  t.add(a.c_str(), grid(64), 6000);
  t.add(a_copy, grid(64), 5000);
  t.add(a.c_str(), grid(128), 90000);  // another grid
  t.add(b.c_str(), grid(64), 70000);   // another kernel
  auto x = t.time("_Z1av", grid(64));
  ASSERT_TRUE(x);
  EXPECT_DOUBLE_EQ(x->median_ns, 5000);
  EXPECT_EQ(x->samples, 2u);  // 4000 and 6000 (a_copy's one launch is its own first; left out)
  EXPECT_EQ(x->launches, 4u);
  x = t.time("_Z1av", grid(128));
  ASSERT_TRUE(x);  // only the first launch: it is all there is
  EXPECT_DOUBLE_EQ(x->median_ns, 90000);
  EXPECT_EQ(x->samples, 1u);
  EXPECT_EQ(x->launches, 1u);
  t.add(a.c_str(), grid(64), 7000);
  t.add(a.c_str(), grid(64), 8000);
  EXPECT_DOUBLE_EQ(t.time("_Z1av", grid(64))->median_ns, 6500);  // even count: mean of the middle two
  EXPECT_FALSE(t.time("_Z1cv", grid(64)));
  EXPECT_FALSE(t.time("_Z1bv", grid(1)));
  t.add(nullptr, grid(1), 1);  // ignored
}

TEST(CaptureInApp, BlockAndSharedMemoryAreOtherShapes) {
  InAppTimes t;
  const char* k = "_Z1kv";
  for (int i = 0; i < 5; ++i) t.add(k, grid(80, 256, 0), 3000);
  for (int i = 0; i < 5; ++i) t.add(k, grid(80, 128, 0), 9000);      // same grid, other block
  for (int i = 0; i < 5; ++i) t.add(k, grid(80, 256, 49152), 20000);  // same grid and block, other smem
  EXPECT_DOUBLE_EQ(t.time(k, grid(80, 256, 0))->median_ns, 3000);
  EXPECT_EQ(t.time(k, grid(80, 256, 0))->samples, 4u);
  EXPECT_DOUBLE_EQ(t.time(k, grid(80, 128, 0))->median_ns, 9000);
  EXPECT_DOUBLE_EQ(t.time(k, grid(80, 256, 49152))->median_ns, 20000);
  EXPECT_FALSE(t.time(k, grid(80, 64, 0)));
}

TEST(CaptureInApp, KeepsTheLatestLaunches) {
  InAppTimes t;
  const char* k = "_Z1kv";
  for (size_t i = 0; i < InAppTimes::kKeep; ++i) t.add(k, grid(1), 1'000'000);  // old and slow
  for (size_t i = 0; i < InAppTimes::kKeep; ++i) t.add(k, grid(1), 10);
  const auto x = t.time(k, grid(1));
  EXPECT_DOUBLE_EQ(x->median_ns, 10);
  EXPECT_EQ(x->samples, InAppTimes::kKeep);
  EXPECT_EQ(x->launches, 2 * InAppTimes::kKeep);
}

TEST(CaptureInApp, ManyShapesForgetTheOldest) {
  InAppTimes t;
  const char* k = "_Z1kv";
  for (uint32_t g = 1; g <= InAppTimes::kShapes + 1; ++g) t.add(k, grid(g), g);
  EXPECT_FALSE(t.time(k, grid(1)));  // launched longest ago
  EXPECT_TRUE(t.time(k, grid(2)));
  EXPECT_TRUE(t.time(k, grid(InAppTimes::kShapes + 1)));
}

TEST(CaptureInApp, KernelRecordsGiveNameShapeAndDuration) {
  InAppTimes t;
  CUpti_ActivityKernel10 r{};
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.name = "_Z1kv";
  r.gridX = 80, r.gridY = 2, r.gridZ = 1;
  r.blockX = 256, r.blockY = 1, r.blockZ = 1;
  r.dynamicSharedMemory = 4096;
  for (uint64_t d : {9000u, 3000u, 3100u, 2900u}) {
    r.start = 1'000'000;
    r.end = r.start + d;
    add_kernel_record(t, r);
  }
  r.end = 0;  // timestamps not filled in: left out
  add_kernel_record(t, r);
  CUpti_ActivityKernel10 ours = r;  // kerncap's snapshot scan: not the application's work
  ours.name = "kerncap_scan";
  ours.end = ours.start + 50000;
  add_kernel_record(t, ours);
  EXPECT_FALSE(t.time("kerncap_scan", LaunchShape{{80, 2, 1}, {256, 1, 1}, 4096}));
  const LaunchShape shape{{80, 2, 1}, {256, 1, 1}, 4096};
  const auto x = t.time("_Z1kv", shape);
  ASSERT_TRUE(x);
  EXPECT_DOUBLE_EQ(x->median_ns, 3000);  // 9000 was the first launch
  EXPECT_EQ(x->samples, 3u);
  EXPECT_EQ(x->launches, 4u);
  EXPECT_FALSE(t.time("_Z1kv", LaunchShape{{80, 2, 1}, {256, 1, 1}, 0}));  // other shared memory
}

TEST(CaptureInApp, SpreadFirstLatestAndIdleBefore) {
  InAppTimes t;
  const char* k = "_Z1kv";
  // Kernel records in completion order: queued back to back, then launched after idle gaps.
  struct R { uint64_t start, end; };
  for (R r : std::initializer_list<R>{{1000, 9000}, {9000, 12000}, {12000, 15000}, {15500, 18500}, {30000, 34000}}) {
    CUpti_ActivityKernel10 rec{};
    rec.name = k;
    rec.gridX = rec.gridY = rec.gridZ = rec.blockX = rec.blockY = rec.blockZ = 1;
    rec.start = r.start;
    rec.end = r.end;
    add_kernel_record(t, rec);
  }
  const auto x = t.time(k, LaunchShape{{1, 1, 1}, {1, 1, 1}, 0});
  ASSERT_TRUE(x);
  EXPECT_EQ(x->samples, 4u);
  EXPECT_DOUBLE_EQ(x->median_ns, 3000);
  EXPECT_EQ(x->min_ns, 3000u);
  EXPECT_EQ(x->max_ns, 4000u);
  EXPECT_EQ(x->first_ns, 8000u);
  EXPECT_EQ(x->latest_ns, 4000u);
  EXPECT_DOUBLE_EQ(x->median_idle_ns, 250);  // idle before the later launches: 0, 0, 500, 11500
  EXPECT_EQ(t.idle_before(100, 200), 0u);     // an older record: it overlapped what came after
}

TEST(CaptureInApp, OtherKernelsBetweenTwoLaunches) {
  InAppTimes loop, mixed;
  const char* k = "_Z1kv";
  const char* other = "_Z5otherv";
  for (int i = 0; i < 5; ++i) loop.add(k, grid(1), 3000);  // a loop of one op: nothing between
  EXPECT_DOUBLE_EQ(loop.time(k, grid(1))->median_between_ns, 0);
  for (int i = 0; i < 5; ++i) {
    mixed.add(k, grid(1), 3000);
    mixed.add(other, grid(9), 40000);  // the application's other work
    mixed.add(other, grid(9), 10000);
    mixed.add(k, grid(2), 500);  // the same kernel in another shape is other work too
  }
  EXPECT_DOUBLE_EQ(mixed.time(k, grid(1))->median_between_ns, 50500);
  // `other` runs twice in a row: 0 before its second launch, 3500 before the next first one.
  EXPECT_DOUBLE_EQ(mixed.time(other, grid(9))->median_between_ns, 0);
  EXPECT_EQ(mixed.time(other, grid(9))->samples, 9u);
}

TEST(CaptureInApp, TheCapturedLaunchIsLeftOutWhileOthersRemain) {
  InAppTimes t;
  const char* k = "_Z1kv";
  t.add(k, grid(4), 9000);  // first
  t.add(k, grid(4), 3000);
  t.add(k, grid(4), 3200);
  t.add(k, grid(8), 100);   // another shape launched in between
  t.add(k, grid(4), 5000);  // the captured launch, after the snapshot
  auto x = t.time(k, grid(4), true);
  EXPECT_DOUBLE_EQ(x->median_ns, 3100);
  EXPECT_EQ(x->samples, 2u);
  EXPECT_EQ(x->launches, 4u);
  EXPECT_EQ(x->latest_ns, 5000u);
  EXPECT_EQ(x->max_ns, 3200u);
  EXPECT_DOUBLE_EQ(t.time(k, grid(4))->median_ns, 3200);  // kept when not asked
  // A full ring: the latest is the one before `next`.
  for (size_t i = 0; i < InAppTimes::kKeep + 3; ++i) t.add(k, grid(4), 1000 + (i == InAppTimes::kKeep + 2 ? 99000 : 0));
  x = t.time(k, grid(4), true);
  EXPECT_EQ(x->samples, InAppTimes::kKeep - 1);
  EXPECT_EQ(x->max_ns, 1000u);
  EXPECT_EQ(x->latest_ns, 100000u);
  // Only the first and the captured launch: the captured one is all there is after the first.
  InAppTimes two;
  two.add(k, grid(1), 9000);
  two.add(k, grid(1), 5000);
  EXPECT_DOUBLE_EQ(two.time(k, grid(1), true)->median_ns, 5000);
  EXPECT_EQ(two.time(k, grid(1), true)->samples, 1u);
  // Only the first: nothing to leave out.
  InAppTimes one;
  one.add(k, grid(1), 9000);
  EXPECT_DOUBLE_EQ(one.time(k, grid(1), true)->median_ns, 9000);
}

}  // namespace
}  // namespace kerncap::capture
