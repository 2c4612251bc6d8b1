// Which bytes timing puts back before every launch (pure; no GPU).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "replay/state_reset.hpp"

namespace kerncap::replay {
namespace {

format::Manifest two_regions() {
  format::Manifest m;
  m.regions.push_back({.id = 7, .base = 0x1000, .size = 4096});
  m.regions.push_back({.id = 9, .base = 0x9000, .size = 100});
  return m;
}

TEST(StateReset, AfterRunsSortedAndMerged) {
  format::Manifest m = two_regions();
  m.after = {{.region = 9, .offset = 0, .size = 10},
             {.region = 7, .offset = 200, .size = 50},
             {.region = 7, .offset = 100, .size = 100},  // adjacent to the one at 200
             {.region = 7, .offset = 1000, .size = 8},
             {.region = 7, .offset = 1004, .size = 8}};  // overlaps the one at 1000
  const auto r = reset_ranges(m, nullptr);
  const std::vector<ResetRange> want = {{0, 100, 150}, {0, 1000, 12}, {1, 0, 10}};
  EXPECT_EQ(r, want);
  EXPECT_EQ(total_bytes(r), 172u);
}

TEST(StateReset, RunsAreClampedToTheirRegion) {
  format::Manifest m = two_regions();
  m.after = {{.region = 9, .offset = 90, .size = 64}, {.region = 9, .offset = 500, .size = 4}};
  const std::vector<ResetRange> want = {{1, 90, 10}};
  EXPECT_EQ(reset_ranges(m, nullptr), want);
}

TEST(StateReset, UnknownRegionIsAnInputError) {
  format::Manifest m = two_regions();
  m.after = {{.region = 3, .offset = 0, .size = 4}};
  try {
    reset_ranges(m, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
  }
}

format::Footprint footprint_of(const format::Manifest& m) {
  format::Footprint f;
  for (const auto& r : m.regions) {
    format::RegionFootprint x;
    x.id = r.id;
    x.size = r.size;
    x.read = format::Bitmap(4, r.size);
    x.written = format::Bitmap(1, r.size);
    x.rbw = format::Bitmap(4, r.size);
    f.regions.push_back(x);
  }
  return f;
}

TEST(StateReset, FootprintWrittenBytesJoinTheAfterRuns) {
  format::Manifest m = two_regions();
  m.after = {{.region = 7, .offset = 0, .size = 16}};
  format::Footprint f = footprint_of(m);
  f.regions[0].written.set_range(16, 8);   // adjacent: merges with the AFTER run
  f.regions[0].written.set_range(64, 4);   // a counter reset to its old value: not in AFTER
  f.regions[1].written.set_range(96, 4);
  const std::vector<ResetRange> want = {{0, 0, 24}, {0, 64, 4}, {1, 96, 4}};
  EXPECT_EQ(reset_ranges(m, &f), want);
}

TEST(StateReset, FootprintOfAnotherCaptureIsAnInputError) {
  format::Manifest m = two_regions();
  format::Footprint f = footprint_of(m);
  f.regions.pop_back();
  EXPECT_THROW(reset_ranges(m, &f), Error);
  f = footprint_of(m);
  f.regions[1].size = 99;
  EXPECT_THROW(reset_ranges(m, &f), Error);
}

TEST(StateReset, NothingWrittenNothingToReset) {
  EXPECT_TRUE(reset_ranges(two_regions(), nullptr).empty());
}

TEST(StateReset, CopiesMergeWhereDeviceAndStagingAreContiguous) {
  // Region 0 ends where region 1 begins in the replay: its last range and region 1's first
  // become one copy; a gap in the device splits.
  const std::vector<ResetRange> ranges = {{0, 0, 16}, {0, 4080, 16}, {1, 0, 8}, {1, 32, 8}};
  const std::vector<uint64_t> addresses = {0x10000, 0x10000 + 4096};
  const std::vector<ResetCopy> want = {{0x10000, 0, 16}, {0x10000 + 4080, 16, 24}, {0x10000 + 4096 + 32, 40, 8}};
  EXPECT_EQ(plan_copies(ranges, addresses), want);
}

// Timing puts back only what the launch may read: bytes written and never loaded stay as the
// previous launch wrote them (their copy would evict the launch's inputs from L2).
TEST(StateReset, TimingPutsBackOnlyTheBytesTheLaunchMayRead) {
  format::Manifest m = two_regions();
  m.after = {{.region = 7, .offset = 0, .size = 4096}, {.region = 9, .offset = 0, .size = 100}};
  format::Footprint f = footprint_of(m);
  f.regions[0].read.set_range(25, 2);  // bytes 100..107 loaded (4-byte granules)
  f.regions[0].read.set(1000);         // bytes 4000..4003 (a counter the launch reads)
  const auto ranges = reset_ranges(m, &f);
  const std::vector<ResetRange> read = {{0, 100, 8}, {0, 4000, 4}};  // region 1: never read at all
  EXPECT_EQ(read_parts(ranges, m, &f), read);
  // Without a footprint, or where its region was probed (TMA: loads unseen too), everything.
  EXPECT_EQ(read_parts(ranges, m, nullptr), ranges);
  f.regions[1].probed = true;
  const std::vector<ResetRange> probed = {{0, 100, 8}, {0, 4000, 4}, {1, 0, 100}};
  EXPECT_EQ(read_parts(ranges, m, &f), probed);
  // The parts' copies come from where plan_copies staged their ranges.
  const std::vector<uint64_t> addresses = {0x10000, 0x20000};
  const std::vector<ResetCopy> want = {{0x10000 + 100, 100, 8}, {0x10000 + 4000, 4000, 4}, {0x20000, 4096, 100}};
  EXPECT_EQ(plan_part_copies(ranges, probed, addresses), want);
}

TEST(StateReset, PartsOfSeveralRangesKeepTheirStagingOffsets) {
  const std::vector<ResetRange> ranges = {{0, 0, 16}, {0, 64, 32}, {1, 8, 8}};
  const std::vector<ResetRange> parts = {{0, 4, 4}, {0, 80, 16}, {1, 8, 8}};
  const std::vector<uint64_t> addresses = {0x1000, 0x1000 + 96};
  // 0x1000+80..96 (staging 32..48) and region 1's 0x1000+104 (staging 48..56) are contiguous
  // in staging but not on the device: two copies.
  const std::vector<ResetCopy> want = {{0x1004, 4, 4}, {0x1000 + 80, 32, 16}, {0x1000 + 96 + 8, 48, 8}};
  EXPECT_EQ(plan_part_copies(ranges, parts, addresses), want);
}

TEST(StateReset, StagingOnTheDeviceOnlyWithAMargin) {
  const uint64_t GiB = 1ull << 30;
  EXPECT_EQ(choose_staging(1 * GiB, 40 * GiB, 80 * GiB), StagingPlace::Device);
  EXPECT_EQ(choose_staging(39 * GiB, 40 * GiB, 80 * GiB), StagingPlace::Host);  // margin is 4 GiB of 80
  EXPECT_EQ(choose_staging(1 << 20, 200 << 20, 8 * GiB), StagingPlace::Host);     // under the 256 MiB floor
  EXPECT_EQ(choose_staging(1 << 20, 0, 80 * GiB), StagingPlace::Host);
  EXPECT_EQ(to_string(StagingPlace::Device), "device");
}

}  // namespace
}  // namespace kerncap::replay
