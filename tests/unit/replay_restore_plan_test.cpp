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

// Strong validation of a pool of zeros: the poison (a constant filter) keeps the pool a
// memset and writes its long runs with memsets over it; nothing of the pool is staged.
TEST(RestorePlan, APoisonedPoolOfZerosStaysOnTheDevice) {
  const uint64_t size = 100ull << 30;  // 100 GiB, all zeros but 8 MiB stored in the middle
  const std::vector<Segment> segs = {{0, 50ull << 30, 0}, {50ull << 30, 8 * MiB, std::nullopt},
                                     {(50ull << 30) + 8 * MiB, size - (50ull << 30) - 8 * MiB, 0}};
  // Written without being read: 16 MiB in the first zero run, 1 MiB of the stored bytes.
  const std::vector<ByteRange> poison = {{4 * MiB, 20 * MiB}, {(50ull << 30) + MiB, (50ull << 30) + 2 * MiB}};
  const ReachSplit split = split_reach(poison);
  ASSERT_EQ(split.memset.size(), 2u);
  EXPECT_TRUE(split.staged.empty());
  RestorePlanOptions o;
  o.staged = &split.staged;
  const auto steps = plan_restore(segs, 0x7f0000000000, size, o);
  expect_cover(steps, size);
  uint64_t copied = 0;
  for (const auto& s : steps)
    if (!s.fill) copied += s.size;
  EXPECT_EQ(copied, 8 * MiB);  // only the stored bytes cross PCIe
  const auto over = overlay_fills(steps, split.memset, 0xA5);
  ASSERT_EQ(over.size(), 1u);  // the poison inside the stored bytes is the host filter's
  EXPECT_EQ(over[0].offset, 4 * MiB);
  EXPECT_EQ(over[0].size, 16 * MiB);
  EXPECT_EQ(over[0].fill, std::optional<uint8_t>(0xA5));
}

// A filter that changes bytes by value (fuzzing's inputs) gets exactly its ranges staged;
// short ranges of a constant filter too, together with the few bytes around them.
TEST(RestorePlan, StagedRangesAreCutOutOfTheFills) {
  const std::vector<Segment> segs = {{0, 64 * MiB, 0}};
  const std::vector<ByteRange> staged = {{10 * MiB + 3, 10 * MiB + 4099}, {30 * MiB, 31 * MiB}};
  RestorePlanOptions o;
  o.staged = &staged;
  const uint64_t base = 0x7f0000000000;
  const auto steps = plan_restore(segs, base, 64 * MiB, o);
  expect_cover(steps, 64 * MiB);
  for (const ByteRange& r : staged)
    for (const auto& s : steps)
      if (s.fill) {
        EXPECT_TRUE(s.offset + s.size <= r.begin || s.offset >= r.end) << s.offset;
      }
  uint64_t copied = 0;
  for (const auto& s : steps) {
    if (s.offset) {
      EXPECT_EQ((base + s.offset) % 8, 0u);
    }
    if (!s.fill) copied += s.size;
  }
  EXPECT_EQ(copied, 4096 + 8 + MiB);  // the ranges, widened to whole words
  const ReachSplit split = split_reach({{0, 100}, {200, 200 + (64 << 10)}});
  ASSERT_EQ(split.staged.size(), 1u);
  ASSERT_EQ(split.memset.size(), 1u);
  EXPECT_EQ(split.memset[0].begin, 200u);
}

// Short fills between staged ranges ride along in one copy instead of many small calls.
TEST(RestorePlan, CloseStagedRangesBecomeOneCopy) {
  std::vector<ByteRange> staged;
  for (uint64_t k = 0; k < 100; ++k) staged.push_back({8 * MiB + k * 8192, 8 * MiB + k * 8192 + 16});
  RestorePlanOptions o;
  o.staged = &staged;
  const auto steps = plan_restore({{0, 32 * MiB, 0}}, 0, 32 * MiB, o);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_TRUE(steps[0].fill);
  EXPECT_FALSE(steps[1].fill);
  EXPECT_LT(steps[1].size, MiB);
  EXPECT_TRUE(steps[2].fill);
}

TEST(RestorePlan, OverlaysStayInsideFills) {
  const std::vector<RestoreStep> steps = {{0, 4 * MiB, 0}, {4 * MiB, 2 * MiB, std::nullopt}, {6 * MiB, 4 * MiB, 0}};
  const auto over = overlay_fills(steps, {{3 * MiB, 7 * MiB}, {9 * MiB, 12 * MiB}}, 0x5A);
  ASSERT_EQ(over.size(), 3u);
  EXPECT_EQ(over[0].offset, 3 * MiB);
  EXPECT_EQ(over[0].size, MiB);
  EXPECT_EQ(over[1].offset, 6 * MiB);
  EXPECT_EQ(over[1].size, MiB);
  EXPECT_EQ(over[2].offset, 9 * MiB);
  EXPECT_EQ(over[2].size, MiB);  // clipped at the region's (the last step's) end
}

TEST(RestorePlan, MergeRanges) {
  const auto m = merge_ranges({{10, 20}, {0, 5}, {5, 8}, {15, 30}, {40, 40}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0], (ByteRange{0, 8}));
  EXPECT_EQ(m[1], (ByteRange{10, 30}));
}
