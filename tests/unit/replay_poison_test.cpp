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
}  // namespace kerncap::replay
