// The footprint's bitmaps and their compact encodings: what is set comes back exactly,
// whichever encoding is chosen, and byte counts respect the region's end.
#include <gtest/gtest.h>

#include <random>

#include "format/footprint.hpp"

namespace kerncap::format {
namespace {

Bitmap round_trip(const Bitmap& b, BitmapEncoding* enc) {
  std::vector<uint8_t> data = encode_bitmap(b, enc);
  return decode_bitmap(data, *enc, b.granule(), b.region_size(), b.count());
}

TEST(FootprintBitmap, SizesAndByteCountsClampTheLastGranule) {
  Bitmap b(4, 10);  // granules [0,4) [4,8) [8,10)
  EXPECT_EQ(b.bits(), 3u);
  b.set(0);
  EXPECT_EQ(b.bytes(), 4u);
  b.set(2);
  EXPECT_EQ(b.count(), 2u);
  EXPECT_EQ(b.bytes(), 6u);  // the last granule holds 2 bytes of the region
  Bitmap bytes(1, 10);
  EXPECT_EQ(bytes.bits(), 10u);
  bytes.set_range(3, 7);
  EXPECT_EQ(bytes.bytes(), 7u);
}

TEST(FootprintBitmap, SetRangeAcrossWordBoundaries) {
  Bitmap b(1, 300);
  b.set_range(60, 200);  // partial word, three whole words, partial word
  EXPECT_EQ(b.count(), 200u);
  EXPECT_FALSE(b.test(59));
  EXPECT_TRUE(b.test(60));
  EXPECT_TRUE(b.test(259));
  EXPECT_FALSE(b.test(260));
}

TEST(FootprintBitmap, RunsAreMaximalAndOrdered) {
  Bitmap b(4, 4 * 200);
  b.set_range(0, 3);
  b.set_range(63, 2);   // straddles a 64-bit word
  b.set_range(100, 100);  // to the end
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  b.for_each_run([&](uint64_t first, uint64_t count) { runs.emplace_back(first, count); });
  EXPECT_EQ(runs, (std::vector<std::pair<uint64_t, uint64_t>>{{0, 3}, {63, 2}, {100, 100}}));
}

TEST(FootprintBitmap, FromDeviceWordsPairsThemLittleEndian) {
  const std::vector<uint32_t> words = {0x1u, 0x80000000u, 0x2u};  // bits 0, 63, 65
  Bitmap b = Bitmap::from_words32(4, 4 * 70, words);
  EXPECT_TRUE(b.test(0));
  EXPECT_TRUE(b.test(63));
  EXPECT_TRUE(b.test(65));
  EXPECT_EQ(b.count(), 3u);
}

TEST(FootprintBitmap, DenseSetsEncodeAsFewRunsAndRoundTrip) {
  Bitmap b(4, 64ull << 20);  // a fully read 64 MiB region: one run
  b.set_range(0, b.bits());
  BitmapEncoding enc{};
  std::vector<uint8_t> data = encode_bitmap(b, &enc);
  EXPECT_EQ(enc, BitmapEncoding::Runs);
  EXPECT_LT(data.size(), 16u);
  EXPECT_EQ(round_trip(b, &enc), b);
}

TEST(FootprintBitmap, ScatteredSetsFallBackToRawAndRoundTrip) {
  std::mt19937_64 rng(7);
  Bitmap b(1, 10007);
  for (int i = 0; i < 3000; ++i) b.set(rng() % b.bits());
  BitmapEncoding enc{};
  std::vector<uint8_t> data = encode_bitmap(b, &enc);
  EXPECT_EQ(enc, BitmapEncoding::Raw);
  EXPECT_EQ(data.size(), (10007u + 7) / 8);
  EXPECT_EQ(round_trip(b, &enc), b);
}

TEST(FootprintBitmap, EmptyAndRandomPatternsRoundTrip) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t size = 1 + rng() % 5000;
    Bitmap b(trial % 2 ? 1 : 4, size);
    const int runs = static_cast<int>(rng() % 20);
    for (int r = 0; r < runs; ++r) {
      uint64_t first = rng() % b.bits();
      b.set_range(first, 1 + rng() % (b.bits() - first));
    }
    BitmapEncoding enc{};
    ASSERT_EQ(round_trip(b, &enc), b) << "trial " << trial;
  }
}

// Bitmaps are stored in blocks of Bitmap::kBlockWords words; a block never set holds nothing.
TEST(FootprintBitmap, RunsAndQueriesCrossBlockBoundaries) {
  constexpr uint64_t kBlockBits = Bitmap::kBlockWords * 64;
  Bitmap b(1, 5 * kBlockBits + 123);
  b.set_range(kBlockBits - 7, 20);             // across the first boundary
  b.set_range(3 * kBlockBits, 2 * kBlockBits);  // two whole blocks
  b.set(5 * kBlockBits + 122);                  // the very last bit
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  b.for_each_run([&](uint64_t first, uint64_t count) { runs.emplace_back(first, count); });
  const std::vector<std::pair<uint64_t, uint64_t>> want = {
      {kBlockBits - 7, 20}, {3 * kBlockBits, 2 * kBlockBits}, {5 * kBlockBits + 122, 1}};
  EXPECT_EQ(runs, want);
  EXPECT_EQ(b.count(), 20 + 2 * kBlockBits + 1);
  EXPECT_EQ(b.next_set(0), kBlockBits - 7);
  EXPECT_EQ(b.next_set(kBlockBits + 13), 3 * kBlockBits);  // skips the untouched block 2
  EXPECT_EQ(b.next_clear(3 * kBlockBits), 5 * kBlockBits);
  EXPECT_EQ(b.next_clear(5 * kBlockBits + 122), b.bits());
  EXPECT_FALSE(b.test(2 * kBlockBits + 5));
  EXPECT_EQ(b.word(2 * Bitmap::kBlockWords + 1), 0u);  // in a block never set
  uint64_t words = 0;
  b.for_each_word([&](uint64_t, uint64_t w) { words += w != 0; });
  EXPECT_EQ(words, 2u + 2 * Bitmap::kBlockWords + 1);
  // Equality is of the bits: a range in a block the other never set differs; an all-zero
  // read from the device equals a bitmap never set.
  Bitmap a(1, 5 * kBlockBits + 123), c(1, 5 * kBlockBits + 123);
  a.set(10);
  c.set(10);
  c.set_range(2 * kBlockBits, 64);
  EXPECT_NE(a, c);
  Bitmap d = Bitmap::from_words32(1, 5 * kBlockBits + 123,
                                  std::vector<uint32_t>((5 * kBlockBits + 123 + 31) / 32, 0));
  EXPECT_EQ(d, Bitmap(1, 5 * kBlockBits + 123));
  EXPECT_EQ(d.count(), 0u);
}

TEST(FootprintBitmap, AHugeMostlyEmptyRegionCostsOnlyItsSetBlocks) {
  // 64 GiB at one bit a byte would be 8 GiB dense: here a few blocks.
  const uint64_t size = uint64_t{64} << 30;
  Bitmap written(1, size);
  written.set_range(size / 2, 1 << 20);
  Bitmap read(4, size);
  read.set_range(size / 8, 1 << 17);  // the first half of the written MiB, in 4-byte granules
  EXPECT_EQ(written.bytes(), uint64_t{1} << 20);
  RegionFootprint r;
  r.size = size;
  r.written = written;
  r.read = read;
  r.rbw = Bitmap(4, size);
  EXPECT_EQ(r.never_read().count(), uint64_t{1} << 19);
  EXPECT_EQ(r.write_only_bytes(), uint64_t{1} << 20);
  BitmapEncoding enc{};
  const auto bytes = encode_bitmap(written, &enc);
  EXPECT_EQ(enc, BitmapEncoding::Runs);
  EXPECT_EQ(decode_bitmap(bytes, enc, 1, size, written.count()), written);
}

TEST(FootprintBitmap, WriteOnlyIsWrittenBytesOutsideReadBeforeWrittenGranules) {
  RegionFootprint r;
  r.size = 16;
  r.read = Bitmap(4, 16);
  r.written = Bitmap(1, 16);
  r.rbw = Bitmap(4, 16);
  r.written.set_range(0, 16);
  r.rbw.set(1);  // bytes 4..7 were an input
  r.written.set(3);
  EXPECT_EQ(r.write_only_bytes(), 12u);
  EXPECT_FALSE(r.write_only().test(5));
  EXPECT_TRUE(r.write_only().test(8));
}

}  // namespace
}  // namespace kerncap::format
