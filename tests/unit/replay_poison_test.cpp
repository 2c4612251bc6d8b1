// Which bytes strong validation poisons: the footprint's write-only bytes, piece by piece.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "replay/poison.hpp"

namespace kerncap::replay {
namespace {

format::Manifest manifest() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x1000, 64, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x9000, 32, "mem/1.bin", 0, ""}};
  return m;
}

format::Footprint footprint() {
  format::Footprint f;
  for (const auto& r : manifest().regions) {
    format::RegionFootprint x;
    x.id = r.id;
    x.size = r.size;
    x.read = format::Bitmap(4, r.size);
    x.written = format::Bitmap(1, r.size);
    x.rbw = format::Bitmap(4, r.size);
    f.regions.push_back(x);
  }
  // Region 0: bytes 8..24 written only; bytes 32..40 read (word 8) then written.
  f.regions[0].written.set_range(8, 16);
  f.regions[0].written.set_range(32, 8);
  f.regions[0].read.set_range(8, 2);
  f.regions[0].rbw.set_range(8, 2);
  // Region 1: read only.
  f.regions[1].read.set_range(0, 8);
  return f;
}

TEST(Poison, WriteOnlyBytesArePlanned) {
  const PoisonPlan p = plan_poison(footprint(), manifest());
  ASSERT_EQ(p.runs.size(), 2u);
  ASSERT_EQ(p.runs[0].size(), 1u);
  EXPECT_EQ(p.runs[0][0], std::make_pair(uint64_t{8}, uint64_t{16}));
  EXPECT_TRUE(p.runs[1].empty());
  EXPECT_EQ(p.bytes, 16u);
  EXPECT_EQ(p.written_bytes, 24u);
  EXPECT_EQ(p.written_regions, 1u);
}

// Written first, read later in the instrumented run (a tile status another block polls): not
// read before written, yet another schedule may read it first, so it is never poisoned.
TEST(Poison, BytesReadAfterWritingAreNotPoisoned) {
  auto f = footprint();
  f.regions[0].read.set(5);  // bytes 20..23: written (8..24), then read; not RBW
  const PoisonPlan p = plan_poison(f, manifest());
  ASSERT_EQ(p.runs[0].size(), 1u);
  EXPECT_EQ(p.runs[0][0], std::make_pair(uint64_t{8}, uint64_t{12}));
  EXPECT_EQ(f.regions[0].write_only_bytes(), 16u);  // still write-only in the footprint's report
}

TEST(Poison, PiecesGetOnlyTheirPart) {
  const PoisonPlan p = plan_poison(footprint(), manifest());
  std::vector<uint8_t> piece(16, 0);
  apply_poison(p, 0, 16, piece.data(), piece.size(), 0xA5);  // bytes 16..32: 16..24 poisoned
  for (size_t i = 0; i < piece.size(); ++i) EXPECT_EQ(piece[i], i < 8 ? 0xA5 : 0) << i;
  std::vector<uint8_t> other(32, 0);
  apply_poison(p, 1, 0, other.data(), other.size(), 0xA5);
  for (auto b : other) EXPECT_EQ(b, 0);
}

TEST(Poison, AFootprintOfAnotherCaptureIsRefused) {
  auto m = manifest();
  m.regions.pop_back();
  EXPECT_THROW(plan_poison(footprint(), m), Error);
  m = manifest();
  m.regions[1].size = 16;
  try {
    plan_poison(footprint(), m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kerncap footprint --force"), std::string::npos);
  }
}

}  // namespace
// The plan walks the written runs instead of building never_read()'s bitmap: the runs and
// counts must be never_read()'s, whatever the pattern (odd sizes, runs across granules).
TEST(Poison, RunsAreNeverReadsRunsWithoutItsBitmap) {
  uint64_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (int trial = 0; trial < 50; ++trial) {
    const uint64_t size = 1 + next() % 5000;
    format::Manifest m;
    m.regions = {{0, format::MemKind::Device, 0x1000, size, "mem/0.bin", 0, ""}};
    format::Footprint f;
    format::RegionFootprint x;
    x.size = size;
    x.read = format::Bitmap(4, size);
    x.written = format::Bitmap(1, size);
    x.rbw = format::Bitmap(4, size);
    for (int k = 0; k < 20; ++k) {
      const uint64_t b = next() % size;
      x.written.set_range(b, std::min<uint64_t>(size - b, 1 + next() % 300));
      const uint64_t g = next() % x.read.bits();
      x.read.set_range(g, std::min<uint64_t>(x.read.bits() - g, 1 + next() % 20));
    }
    f.regions.push_back(x);
    const PoisonPlan p = plan_poison(f, m);
    std::vector<std::pair<uint64_t, uint64_t>> want;
    x.never_read().for_each_run([&](uint64_t first, uint64_t count) { want.emplace_back(first, count); });
    EXPECT_EQ(p.runs[0], want) << "trial " << trial;
    EXPECT_EQ(p.bytes, x.never_read().count());
    EXPECT_EQ(p.written_bytes, x.written_bytes());
  }
}

}  // namespace kerncap::replay
