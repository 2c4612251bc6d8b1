// How restore writes a region back: long runs of one value become device memsets, the
// rest staged copies no larger than the staging buffer, every boundary on an 8-byte address.
#include <gtest/gtest.h>

#include "replay/restore_plan.hpp"

using namespace kerncap::replay;
using Segment = kerncap::format::RegionBytes::Segment;

namespace {

constexpr uint64_t MiB = 1ull << 20;

// Every step follows the one before; together they cover [0, size).
void expect_cover(const std::vector<RestoreStep>& steps, uint64_t size) {
  uint64_t at = 0;
  for (const auto& s : steps) {
    EXPECT_EQ(s.offset, at);
    EXPECT_GT(s.size, 0u);
    at += s.size;
  }
  EXPECT_EQ(at, size);
}

}  // namespace

TEST(RestorePlan, AWholeRegionIsCopiedInStagingPieces) {
  const auto steps = plan_restore({{0, 150 * MiB, std::nullopt}}, 0x7f0000000000, 150 * MiB);
  ASSERT_EQ(steps.size(), 3u);
  expect_cover(steps, 150 * MiB);
  EXPECT_EQ(steps[0].size, 64 * MiB);
  EXPECT_EQ(steps[2].size, 22 * MiB);
  for (const auto& s : steps) EXPECT_FALSE(s.fill);
}

TEST(RestorePlan, LongZeroRunsAreMemsetAndOnlyStoredBytesAreCopied) {
  // 16 MiB zeros, 8 MiB stored, 40 MiB zeros: two memsets and one copy.
  const std::vector<Segment> segs = {{0, 16 * MiB, 0}, {16 * MiB, 8 * MiB, std::nullopt}, {24 * MiB, 40 * MiB, 0}};
  const auto steps = plan_restore(segs, 0x7f0000000000, 64 * MiB);
  ASSERT_EQ(steps.size(), 3u);
  expect_cover(steps, 64 * MiB);
  EXPECT_EQ(steps[0].fill, std::optional<uint8_t>(0));
  EXPECT_FALSE(steps[1].fill);
  EXPECT_EQ(steps[1].size, 8 * MiB);
  EXPECT_EQ(steps[2].fill, std::optional<uint8_t>(0));
}

TEST(RestorePlan, CopiesAfterAFillEndOnTheStagingGrid) {
  // A copy from 17 MiB to 150 MiB: pieces end at 64 and 128 MiB (whole 4 MiB chunk windows).
  const std::vector<Segment> segs = {{0, 17 * MiB, 0}, {17 * MiB, 133 * MiB, std::nullopt}};
  const auto steps = plan_restore(segs, 0x7f0000000000, 150 * MiB);
  ASSERT_EQ(steps.size(), 4u);
  expect_cover(steps, 150 * MiB);
  EXPECT_EQ(steps[1].offset + steps[1].size, 64 * MiB);
  EXPECT_EQ(steps[2].offset + steps[2].size, 128 * MiB);
}

TEST(RestorePlan, ShortFillsRideAlongInTheCopy) {
  const std::vector<Segment> segs = {{0, MiB, std::nullopt}, {MiB, 64 << 10, 0}, {MiB + (64 << 10), MiB, std::nullopt}};
  const auto steps = plan_restore(segs, 0x1000, 2 * MiB + (64 << 10));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_FALSE(steps[0].fill);
}

TEST(RestorePlan, PrunedRangesAreFilledWithTheirOwnValue) {
  const std::vector<Segment> segs = {{0, 4 * MiB, std::nullopt}, {4 * MiB, 4 * MiB, 0xCB}, {8 * MiB, 4 * MiB, 0}};
  const auto steps = plan_restore(segs, 0, 12 * MiB);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].fill, std::optional<uint8_t>(0xCB));
  EXPECT_EQ(steps[2].fill, std::optional<uint8_t>(0));
}

TEST(RestorePlan, BoundariesInsideTheRegionFallOnEightByteAddresses) {
  // A global at an odd address: the fill is trimmed to whole words, the copies take the rest.
  const uint64_t base = 0x10003;
  const std::vector<Segment> segs = {{0, 3 * MiB + 1, std::nullopt}, {3 * MiB + 1, 4 * MiB, 0}, {7 * MiB + 1, MiB, std::nullopt}};
  RestorePlanOptions o;
  o.piece = 2 * MiB;
  const auto steps = plan_restore(segs, base, 8 * MiB + 1, o);
  expect_cover(steps, 8 * MiB + 1);
  bool filled = false;
  for (const auto& s : steps) {
    if (s.offset) {
      EXPECT_EQ((base + s.offset) % 8, 0u) << s.offset;
    }
    if (!s.fill) {
      EXPECT_LE(s.size, 2 * MiB);
    }
    filled |= s.fill.has_value();
  }
  EXPECT_TRUE(filled);
}

TEST(RestorePlan, AFilterSeesEveryByte) {
  RestorePlanOptions o;
  o.copy_everything = true;
  const auto steps = plan_restore({{0, 16 * MiB, 0}, {16 * MiB, 4 * MiB, std::nullopt}}, 0, 20 * MiB, o);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_FALSE(steps[0].fill);
}

TEST(RestorePlan, AnAllZeroRegionIsOneMemsetWhateverItsEnds) {
  const auto steps = plan_restore({{0, 100 * MiB + 5, 0}}, 0x7f0000000003, 100 * MiB + 5);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].fill, std::optional<uint8_t>(0));
  EXPECT_EQ(steps[0].size, 100 * MiB + 5);
}
