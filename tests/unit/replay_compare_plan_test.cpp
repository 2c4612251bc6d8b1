// Which blocks the comparison reads back: only where the expected bytes are stored or the
// device did not find the expected value, in the host walk's own blocks and windows.
#include <gtest/gtest.h>

#include "compare/compare.hpp"
#include "replay/compare_plan.hpp"

using namespace kerncap::replay;
using Segment = kerncap::format::RegionBytes::Segment;

namespace {

constexpr uint64_t KiB = 1ull << 10, MiB = 1ull << 20;
constexpr uint64_t kStep = (64 * MiB - 16) / 64 * 64;  // validate's window for a 64 MiB staging buffer

// Steps follow each other, cover the piece, and no read-back step crosses a window.
void expect_cover(const std::vector<CompareStep>& steps, const CompareGrid& g) {
  uint64_t at = g.begin;
  for (const auto& s : steps) {
    EXPECT_EQ(s.offset, at);
    EXPECT_GT(s.size, 0u);
    if (!s.identical()) {
      EXPECT_EQ((s.offset - g.begin) / g.step, (s.offset + s.size - 1 - g.begin) / g.step) << s.offset;
      EXPECT_EQ((s.offset - g.begin) % g.step % g.block, 0u) << "starts on a block of its window";
    }
    at += s.size;
  }
  EXPECT_EQ(at, g.end);
}

uint64_t read_back(const std::vector<CompareStep>& steps) {
  uint64_t n = 0;
  for (const auto& s : steps)
    if (!s.same) n += s.size;
  return n;
}

std::vector<uint32_t> answers(const CompareGrid& g, uint32_t value) { return std::vector<uint32_t>(g.blocks(), value); }

}  // namespace

TEST(ComparePlan, TheGridIsTheHostWalks) {
  const CompareGrid g{100, 100 + 2 * kStep + 70 * KiB, kStep, kerncap::compare::kBlockBytes};
  EXPECT_EQ(g.per_window(), 1024u);  // the window is 64 bytes short of 64 MiB: its last block is short
  EXPECT_EQ(g.blocks(), 2 * 1024 + 2);
  EXPECT_EQ(g.block_at(1023).end - g.block_at(1023).begin, kerncap::compare::kBlockBytes - 64);
  EXPECT_EQ(g.block_at(1024).begin, 100 + kStep);
  EXPECT_EQ(g.block_at(2049).begin, 100 + 2 * kStep + 64 * KiB);
  EXPECT_EQ(g.block_at(2049).end, g.end);
}

TEST(ComparePlan, APoolOfZerosReadsBackOnlyWhatTheLaunchWrote) {
  const uint64_t size = 40ull << 30;  // 40 GiB of zeros; the launch wrote 16 MiB at 1 GiB
  const std::vector<ByteRange> after = {{1ull << 30, (1ull << 30) + 16 * MiB}};
  const auto uniform = expected_uniform({{0, size, 0}}, after, 0x7f0000000000, size, nullptr);
  ASSERT_EQ(uniform.size(), 2u);
  EXPECT_EQ(uniform[0], (UniformRange{0, 1ull << 30, 0}));
  EXPECT_EQ(uniform[1], (UniformRange{(1ull << 30) + 16 * MiB, size, 0}));
  const CompareGrid g{0, size, kStep, kerncap::compare::kBlockBytes};
  EXPECT_TRUE(worth_checking(g, uniform));
  const auto steps = plan_compare(g, uniform, answers(g, 0));
  expect_cover(steps, g);
  // The written bytes, and the blocks of the host walk they touch (at most one more at each end).
  EXPECT_GE(read_back(steps), 16 * MiB);
  EXPECT_LE(read_back(steps), 16 * MiB + 2 * kerncap::compare::kBlockBytes);
}

TEST(ComparePlan, BlocksTheDeviceFindsWrongAreReadBack) {
  const uint64_t size = 256 * MiB;
  const auto uniform = expected_uniform({{0, size, 0}}, {}, 0, size, nullptr);
  const CompareGrid g{0, size, kStep, kerncap::compare::kBlockBytes};
  auto dev = answers(g, 0);
  dev[5] = kMixed;    // a stray write
  dev[7] = 0xA5;      // poison left unwritten
  const auto steps = plan_compare(g, uniform, dev);
  expect_cover(steps, g);
  EXPECT_EQ(read_back(steps), 2 * kerncap::compare::kBlockBytes);
  ASSERT_GE(steps.size(), 4u);
  EXPECT_EQ(steps[1], (CompareStep{5 * kerncap::compare::kBlockBytes, kerncap::compare::kBlockBytes, std::nullopt}));
  EXPECT_EQ(steps[3], (CompareStep{7 * kerncap::compare::kBlockBytes, kerncap::compare::kBlockBytes, std::nullopt}));
}

TEST(ComparePlan, StoredBytesAndOtherFillsAreNotVouchedFor) {
  // Stored bytes in the middle, a pruned range (0xCB) after them: the device's 0xCB counts
  // there, a 0 in the pruned range does not.
  const std::vector<Segment> before = {{0, 8 * MiB, 0}, {8 * MiB, 8 * MiB, std::nullopt}, {16 * MiB, 16 * MiB, 0xCB}};
  const auto uniform = expected_uniform(before, {}, 0, 32 * MiB, nullptr);
  ASSERT_EQ(uniform.size(), 2u);
  const CompareGrid g{0, 32 * MiB, kStep, kerncap::compare::kBlockBytes};
  auto dev = answers(g, 0);
  for (uint64_t c = 0; c < g.blocks(); ++c)
    if (g.block_at(c).begin >= 24 * MiB) dev[c] = 0xCB;
  const auto steps = plan_compare(g, uniform, dev);
  expect_cover(steps, g);
  EXPECT_EQ(read_back(steps), 16 * MiB);  // the stored 8 MiB, and the pruned 8 MiB where the device saw 0
}

TEST(ComparePlan, EdgesKeepWholeWordsAndMovedFillsAreRead) {
  // Base not 8-aligned: uniform ranges end on 8-byte addresses inside the region.
  const uint64_t base = 0x1003;
  const auto uniform = expected_uniform({{0, 16 * MiB, 0}}, {{MiB + 1, MiB + 9}}, base, 16 * MiB, nullptr);
  ASSERT_EQ(uniform.size(), 2u);
  EXPECT_EQ(uniform[0].begin, 0u);
  EXPECT_EQ((base + uniform[0].end) % 8, 0u);
  EXPECT_LE(uniform[0].end, MiB + 1);
  EXPECT_EQ((base + uniform[1].begin) % 8, 0u);
  EXPECT_GE(uniform[1].begin, MiB + 9);
  EXPECT_EQ(uniform[1].end, 16 * MiB);
  // A fill whose word relocation would rewrite is no known value.
  EXPECT_TRUE(expected_uniform({{0, 16 * MiB, 0xCB}}, {}, 0, 16 * MiB, [](uint64_t w) {
                return w == 0xCBCBCBCBCBCBCBCBull;
              }).empty());
}

TEST(ComparePlan, WithoutTheDeviceEveryWindowIsReadBack) {
  const uint64_t size = 200 * MiB;
  const auto uniform = expected_uniform({{0, size, 0}}, {}, 0, size, nullptr);
  const CompareGrid g{3, size, kStep, kerncap::compare::kBlockBytes};
  const auto steps = plan_compare(g, uniform, {});
  expect_cover(steps, g);
  ASSERT_EQ(steps.size(), 4u);  // the host walk of old: one step per window
  EXPECT_EQ(steps[0].size, kStep);
  EXPECT_EQ(read_back(steps), size - 3);
}

TEST(ComparePlan, SmallUniformStretchesAreNotWorthALaunch) {
  const CompareGrid g{0, 64 * MiB, kStep, kerncap::compare::kBlockBytes};
  EXPECT_FALSE(worth_checking(g, {{0, 2 * MiB, 0}}));
  EXPECT_TRUE(worth_checking(g, {{0, 8 * MiB, 0}}));
  EXPECT_FALSE(worth_checking(g, {}));
}

TEST(ComparePlan, UniformRangesFromTheDevicesAnswers) {
  const uint64_t B = kerncap::compare::kBlockBytes;
  const std::vector<uint32_t> answers = {0, 0, kMixed, 0xA5, 0xA5, 0, 7};
  const auto u = uniform_from_answers(answers, 6 * B + 100, B);
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[0], (UniformRange{0, 2 * B, 0}));
  EXPECT_EQ(u[1], (UniformRange{3 * B, 5 * B, 0xA5}));
  EXPECT_EQ(u[2], (UniformRange{5 * B, 6 * B, 0}));
  EXPECT_EQ(u[3], (UniformRange{6 * B, 6 * B + 100, 7}));  // the region's short last block
}
