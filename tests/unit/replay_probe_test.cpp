// Probing write sets the sanitizer cannot see: which regions are probed, what two poisoned
// replays prove.
#include <gtest/gtest.h>

#include <cstring>

#include "replay/probe.hpp"

namespace kerncap::replay {
namespace {

format::Manifest three_regions() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x10000, 0x100, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x20000, 0x100, "mem/1.bin", 0, ""},
               {2, format::MemKind::Device, 0x30000, 0x100, "mem/2.bin", 0, ""}};
  return m;
}

format::Footprint empty_footprint(const format::Manifest& m) {
  format::Footprint f;
  for (const auto& r : m.regions) {
    format::RegionFootprint rf;
    rf.id = r.id;
    rf.size = r.size;
    rf.read = format::Bitmap(4, r.size);
    rf.written = format::Bitmap(1, r.size);
    rf.rbw = format::Bitmap(4, r.size);
    f.regions.push_back(rf);
  }
  return f;
}

std::vector<uint8_t> params_with(std::initializer_list<std::pair<size_t, uint64_t>> words, size_t size) {
  std::vector<uint8_t> p(size, 0);
  for (auto [off, v] : words) std::memcpy(p.data() + off, &v, 8);
  return p;
}

TEST(ProbeCandidates, PointedToAndUntouched) {
  auto m = three_regions();
  auto f = empty_footprint(m);
  f.regions[0].read.set(2);  // the sanitizer saw bytes 8..11 of region 0 read
  // Pointers into regions 0 and 2 (inside, not at the base), one word deep in a 128-byte
  // tensor map; region 1 is not pointed to.
  auto params = params_with({{0, 0x10008}, {72, 0x30010}}, 136);
  EXPECT_EQ(probe_candidates(m, params, f), (std::vector<ProbeSpan>{{2, 0x10, 0x100}}));
}

// Inputs and output in one allocation: each pointer starts its own span, so the output can
// be proven written while the inputs are left alone.
TEST(ProbeCandidates, OneSpanPerPointerIntoARegion) {
  auto m = three_regions();
  auto f = empty_footprint(m);
  auto params = params_with({{0, 0x10080}, {8, 0x10000}, {16, 0x10040}, {24, 0x10040}}, 32);
  EXPECT_EQ(probe_candidates(m, params, f),
            (std::vector<ProbeSpan>{{0, 0, 0x40}, {0, 0x40, 0x80}, {0, 0x80, 0x100}}));
  f.regions[0].written.set(0x90);  // a recorded store inside the last span
  EXPECT_EQ(probe_candidates(m, params, f).size(), 2u);
}

TEST(ProbeCandidates, SizeAndCountLimits) {
  auto m = three_regions();
  auto f = empty_footprint(m);
  auto params = params_with({{0, 0x30000}, {8, 0x20000}, {16, 0x10000}}, 24);
  EXPECT_EQ(probe_candidates(m, params, f).size(), 3u);
  EXPECT_EQ(probe_candidates(m, params, f, 0x100, 2).size(), 2u);
  EXPECT_TRUE(probe_candidates(m, params, f, 0xff).empty());
  f.regions.pop_back();  // a footprint of another capture
  EXPECT_TRUE(probe_candidates(m, params, f).empty());
}

// A CUDA array written through a surface object: no pointer reaches its region (arrays have
// made-up addresses), the sanitizer sees no surface store, yet the whole array is a candidate;
// an array only a texture object is over is not (textures are read-only).
TEST(ProbeCandidates, ArraysUnderSurfaceObjects) {
  auto m = three_regions();
  m.regions.push_back({7, format::MemKind::Array, format::kArrayRegionBase, 0x400, "mem/7.bin", 0, ""});
  m.regions.push_back({8, format::MemKind::Array, format::kArrayRegionBase + 0x400, 0x200, "mem/8.bin", 0, ""});
  format::ArrayRecord surf_array, tex_array;
  surf_array.id = 1;
  surf_array.region = 7;
  tex_array.id = 2;
  tex_array.region = 8;
  m.textures.arrays = {surf_array, tex_array};
  format::TexObjectRecord surf, tex, surf_again;
  surf.id = 0;
  surf.surface = true;
  surf.array = 1;
  tex.id = 1;
  tex.array = 2;
  tex.texture = format::TextureDesc{};
  surf_again = surf;  // a second surface over the same array: one span
  surf_again.id = 2;
  m.textures.objects = {surf, tex, surf_again};
  auto f = empty_footprint(m);
  const std::vector<uint8_t> no_params;
  EXPECT_EQ(probe_candidates(m, no_params, f), (std::vector<ProbeSpan>{{3, 0, 0x400, kFromSurface}}));
  // Too large to probe, or already seen written by the sanitizer (nothing left to prove).
  EXPECT_TRUE(probe_candidates(m, no_params, f, 0x3ff).empty());
  f.regions[3].written.set(0x10);
  EXPECT_TRUE(probe_candidates(m, no_params, f).empty());
}

TEST(ClassifyProbe, WrittenUntouchedAndRead) {
  const std::vector<uint8_t> expected = {1, 2, 3, 4, 9, 9};
  // Bytes 0..3 written (same in both runs, equal to the application's); 4..5 untouched.
  std::vector<uint8_t> a = {1, 2, 3, 4, kProbePoisonA, kProbePoisonA};
  std::vector<uint8_t> b = {1, 2, 3, 4, kProbePoisonB, kProbePoisonB};
  auto w = classify_probe(a, b, expected);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->count(), 4u);
  EXPECT_TRUE(w->test(3));
  EXPECT_FALSE(w->test(4));
  // A byte that depends on the poison: the region is read.
  b[2] = 7;
  EXPECT_FALSE(classify_probe(a, b, expected));
  // Written the same both times, but not what the application got.
  b[2] = 3;
  a[2] = b[2] = 8;
  EXPECT_FALSE(classify_probe(a, b, expected));
  // Nothing written: an empty set, not a failure.
  std::vector<uint8_t> pa(6, kProbePoisonA), pb(6, kProbePoisonB);
  auto none = classify_probe(pa, pb, expected);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->count(), 0u);
  EXPECT_FALSE(classify_probe(pa, std::vector<uint8_t>(5, kProbePoisonB), expected));
}

}  // namespace
}  // namespace kerncap::replay
