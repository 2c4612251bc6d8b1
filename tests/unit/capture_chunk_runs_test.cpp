// Which ranges the snapshot copies, from the device scan's chunk signatures.
#include <gtest/gtest.h>

#include "capture/chunk_runs.hpp"

namespace kerncap::capture {
namespace {

TEST(ChunkRuns, NonZeroChunksBecomeRunsAndSmallGapsAreStored) {
  // Chunks of 100 bytes; the region's last chunk is short (50 bytes).
  const std::vector<uint64_t> sig = {0, 7, 9, 0, 0, 0, 5, 0, 3};
  const uint64_t size = 850;
  EXPECT_EQ(nonzero_runs(sig, size, 100, 1), (std::vector<ByteRun>{{100, 200}, {600, 100}, {800, 50}}));
  // Gaps under 150 bytes are stored with their neighbours; the 300-byte gap is not.
  EXPECT_EQ(nonzero_runs(sig, size, 100, 150), (std::vector<ByteRun>{{100, 200}, {600, 250}}));
  EXPECT_TRUE(nonzero_runs({0, 0, 0}, 300, 100, 1).empty());
  EXPECT_EQ(nonzero_runs({1, 1}, 150, 100, 1), (std::vector<ByteRun>{{0, 150}}));
}

TEST(ChunkRuns, MergeGapBoundsTheRunCount) {
  EXPECT_EQ(merge_gap(uint64_t{80} << 30, 8192, 65536), (uint64_t{80} << 30) / 8192);
  EXPECT_EQ(merge_gap(1 << 20, 8192, 65536), 65536u);
  // Alternating zero and non-zero chunks over 64 MiB: about 8192 runs at most.
  const uint32_t chunk = 4096;
  const uint64_t size = uint64_t{64} << 20;
  std::vector<uint64_t> sig(size / chunk);
  for (size_t i = 0; i < sig.size(); i += 2) sig[i] = 1;
  EXPECT_LE(nonzero_runs(sig, size, chunk, merge_gap(size, 8192, chunk)).size(), 8192u);
}

TEST(ChunkRuns, ChangedRunsAreExact) {
  const std::vector<uint64_t> before = {1, 2, 3, 4, 5};
  EXPECT_TRUE(changed_runs(before, before, 450, 100).empty());
  EXPECT_EQ(changed_runs(before, {1, 9, 9, 4, 6}, 450, 100), (std::vector<ByteRun>{{100, 200}, {400, 50}}));
  // A chunk that became zero changed too (its signature went to 0).
  EXPECT_EQ(changed_runs(before, {0, 2, 3, 4, 5}, 450, 100), (std::vector<ByteRun>{{0, 100}}));
}

}  // namespace
}  // namespace kerncap::capture
