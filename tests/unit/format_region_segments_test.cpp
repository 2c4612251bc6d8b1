// RegionBytes::segments(): a region cut into what restore reads (stored bytes) and what it
// memsets (zeros not stored, pruned ranges, an omitted region), nothing read to tell.
#include <gtest/gtest.h>

#include <random>

#include "format/region_bytes.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

using Seg = RegionBytes::Segment;

std::vector<Seg> segments_of(const Region& r) {
  Capture c;
  return RegionBytes(c, r).segments();
}

void expect_segs(const std::vector<Seg>& got, const std::vector<Seg>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].offset, want[i].offset) << i;
    EXPECT_EQ(got[i].size, want[i].size) << i;
    EXPECT_EQ(got[i].fill, want[i].fill) << i;
  }
}

TEST(RegionSegments, AWholeRegionIsOneStoredSegment) {
  Region r;
  r.size = 4096;
  expect_segs(segments_of(r), {{0, 4096, std::nullopt}});
}

TEST(RegionSegments, SparseRegionsAlternateStoredRunsAndZeros) {
  Region r;
  r.size = 1000;
  r.stored = std::vector<StoredRun>{{100, 50}, {150, 50}, {500, 100}};
  expect_segs(segments_of(r), {{0, 100, 0}, {100, 100, std::nullopt}, {200, 300, 0}, {500, 100, std::nullopt},
                               {600, 400, 0}});
}

TEST(RegionSegments, PrunedRangesHoldThePoisonFill) {
  Region r;
  r.size = 1000;
  r.stored = std::vector<StoredRun>{{0, 100}};
  r.pruned = {{100, 200}, {400, 600}};
  expect_segs(segments_of(r), {{0, 100, std::nullopt}, {100, 200, kOmittedFill}, {300, 100, 0}, {400, 600, kOmittedFill}});
}

TEST(RegionSegments, AnOmittedRegionIsAllPoison) {
  Region r;
  r.size = 1 << 20;
  r.omitted = true;
  r.stored = std::vector<StoredRun>{};
  r.pruned = {{4096, 4096}};
  expect_segs(segments_of(r), {{0, 1 << 20, kOmittedFill}});
}

TEST(RegionSegments, AllZerosIsOneFill) {
  Region r;
  r.size = 77;
  r.stored = std::vector<StoredRun>{};
  expect_segs(segments_of(r), {{0, 77, 0}});
}

// Reads of any offset and size give the bytes written, whether they cover chunks whole (decoded
// side by side), in part (decoded into a buffer, the last one kept for the next read) or both.
class RegionReads : public kerncap::testing::ScratchDir {};

TEST_F(RegionReads, PiecesOfChunksReadBackAsWritten) {
  constexpr uint64_t kWindow = 4096;
  std::vector<uint8_t> bytes(20 * kWindow + 123);
  std::mt19937_64 rng(7);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng() % 7);  // compressible, not uniform
  Capture c;
  c.dir = out_;
  Region r;
  r.size = bytes.size();
  {
    ChunkWriter w({out_ / kChunkDir, kDefaultZstdLevel, 2, 0});
    RegionChunker chunker(w, kWindow);
    chunker.add(0, bytes.data(), bytes.size());
    const auto tickets = chunker.finish();
    w.finish();
    for (size_t t : tickets) r.chunks.push_back(w.ref(t));
  }
  ASSERT_EQ(r.chunks.size(), 21u);
  RegionBytes in(c, r);
  std::vector<uint8_t> got(bytes.size());
  in.read_at(0, got.data(), got.size());
  EXPECT_EQ(got, bytes);
  // Sequential pieces that end inside chunks, then random ones.
  for (uint64_t at = 0, n = 3 * kWindow + 5; at < bytes.size(); at += n) {
    const uint64_t k = std::min<uint64_t>(n, bytes.size() - at);
    std::vector<uint8_t> piece(k);
    in.read_at(at, piece.data(), k);
    ASSERT_TRUE(std::equal(piece.begin(), piece.end(), bytes.begin() + static_cast<ptrdiff_t>(at))) << at;
  }
  for (int i = 0; i < 200; ++i) {
    const uint64_t at = rng() % bytes.size(), k = 1 + rng() % std::min<uint64_t>(bytes.size() - at, 5 * kWindow);
    std::vector<uint8_t> piece(k);
    in.read_at(at, piece.data(), k);
    ASSERT_TRUE(std::equal(piece.begin(), piece.end(), bytes.begin() + static_cast<ptrdiff_t>(at))) << at << "+" << k;
  }
}

// A sparse region read as restore reads it: several pieces at once (the runs between long
// zero runs), the zeros between stored runs filled, chunks shared by two pieces decoded once.
TEST_F(RegionReads, SeveralPiecesAtOnceOfASparseRegion) {
  constexpr uint64_t kWindow = 4096;
  const uint64_t size = 16 * kWindow;
  std::vector<uint8_t> bytes(size, 0);
  std::mt19937_64 rng(11);
  Region r;
  r.size = size;
  r.stored.emplace();
  // Runs: some inside one window, some across windows.
  for (const auto& [off, n] : std::vector<std::pair<uint64_t, uint64_t>>{
           {100, 200}, {1000, 5000}, {3 * kWindow, 2 * kWindow}, {6 * kWindow + 10, 30}, {6 * kWindow + 500, 9000}}) {
    for (uint64_t k = off; k < off + n; ++k) bytes[k] = static_cast<uint8_t>(1 + rng() % 200);
    r.stored->push_back({off, n});
  }
  r.pruned = {{14 * kWindow, kWindow}};
  Capture c;
  c.dir = out_;
  {
    ChunkWriter w({out_ / kChunkDir, kDefaultZstdLevel, 2, 0});
    RegionChunker chunker(w, kWindow);
    for (const auto& run : *r.stored) chunker.add(run.offset, bytes.data() + run.offset, run.size);
    const auto tickets = chunker.finish();
    w.finish();
    for (size_t t : tickets) r.chunks.push_back(w.ref(t));
  }
  std::vector<uint8_t> want = bytes;
  std::fill(want.begin() + 14 * kWindow, want.begin() + 15 * kWindow, kOmittedFill);
  RegionBytes in(c, r);
  std::vector<uint8_t> a(size, 0x77), b(size, 0x77);
  // Pieces [0, 150), [150, 3 * window + 7), [6 * window, 16 * window): apart, in order.
  in.read_pieces({{0, 150, a.data()}, {150, 3 * kWindow - 143, a.data() + 150}, {6 * kWindow, 10 * kWindow, a.data() + 6 * kWindow}});
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 3 * kWindow + 7, want.begin()));
  EXPECT_TRUE(std::equal(a.begin() + 6 * kWindow, a.end(), want.begin() + 6 * kWindow));
  EXPECT_EQ(a[3 * kWindow + 8], 0x77);  // between the pieces: untouched
  in.read_at(0, b.data(), size);
  EXPECT_EQ(b, want);
}

}  // namespace
}  // namespace kerncap::format
