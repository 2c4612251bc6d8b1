#include <gtest/gtest.h>

#include "replay/plan.hpp"

using namespace kerncap::replay;

constexpr uint64_t MiB = 1ull << 20;

TEST(ReplayPlan, NeighboursShareA32MiBBlockAndOnlyDataPiecesAreMapped) {
  const uint64_t base = 0x7f0000000000;
  std::vector<Span> regions = {{base + 4 * MiB, base + 4 * MiB + 4096},      // small, inside a chunk
                               {base + 4 * MiB + 8192, base + 5 * MiB},      // same 2 MiB piece
                               {base + 20 * MiB, base + 26 * MiB},           // further, same block
                               {base + 100 * MiB, base + 101 * MiB}};        // another block
  auto blocks = plan_blocks(regions);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].span.begin, base);
  EXPECT_EQ(blocks[0].span.end, base + 32 * MiB);
  EXPECT_EQ(blocks[0].regions.size(), 3u);
  ASSERT_EQ(blocks[0].pieces.size(), 2u);
  EXPECT_EQ(blocks[0].pieces[0].begin, base + 4 * MiB);
  EXPECT_EQ(blocks[0].pieces[0].end, base + 6 * MiB);
  EXPECT_EQ(blocks[0].pieces[1].begin, base + 20 * MiB);
  EXPECT_EQ(blocks[0].pieces[1].end, base + 26 * MiB);
  EXPECT_EQ(blocks[1].span.begin, base + 96 * MiB);
  EXPECT_EQ(blocks[1].pieces[0].size(), 2 * MiB);
}

TEST(ReplayPlan, BlocksThatTouchMergeAndRegionsMayStraddleBoundaries) {
  const uint64_t base = 0x302000000;  // the async-pool base seen on the H100
  std::vector<Span> regions = {{base + 31 * MiB, base + 33 * MiB}, {base + 64 * MiB, base + 65 * MiB}};
  auto blocks = plan_blocks(regions);
  ASSERT_EQ(blocks.size(), 1u);  // [base, base+64M) and [base+64M, base+96M) touch
  EXPECT_EQ(blocks[0].span.begin % kBlockAlign, 0u);
  EXPECT_LE(blocks[0].span.begin, base + 31 * MiB);
  EXPECT_GE(blocks[0].span.end, base + 65 * MiB);
  for (const auto& p : blocks[0].pieces) {
    EXPECT_EQ(p.begin % kPieceAlign, 0u);
    EXPECT_EQ(p.end % kPieceAlign, 0u);
  }
}

TEST(ReplayPlan, EmptyRegionsAreIgnored) {
  EXPECT_TRUE(plan_blocks({{0x1000, 0x1000}}).empty());
  EXPECT_TRUE(plan_pieces({}).empty());
}

// A run of pieces is mapped by the kind of memory behind each piece: a device region beside a
// small host-mapped one stays in device memory (it was all replayed in pinned host memory).
TEST(PlanSplitByKind, CutsARunWhereHostMemoryBeginsAndEnds) {
  using kerncap::replay::Span;
  const uint64_t mib = 1ull << 20;
  const Span host{100 * mib, 100 * mib + 4};  // a 4-byte host-mapped flag
  auto is_host = [&](const Span& s) { return s.begin < host.end && host.begin < s.end; };
  const auto k = kerncap::replay::split_by_kind({100 * mib, 124 * mib}, 2 * mib, is_host);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_TRUE(k[0].host);
  EXPECT_EQ(k[0].span.end, 102 * mib);
  EXPECT_FALSE(k[1].host);
  EXPECT_EQ(k[1].span.begin, 102 * mib);
  EXPECT_EQ(k[1].span.end, 124 * mib);
  const auto d = kerncap::replay::split_by_kind({200 * mib, 240 * mib}, 2 * mib, is_host);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].host);
  EXPECT_EQ(d[0].span.end, 240 * mib);
}
