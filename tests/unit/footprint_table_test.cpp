// The host side of a measurement without a GPU: the device region table, the patch's
// marking logic (marking.h, the code nvcc builds into the patch, run here on host memory),
// and the translation of what came back into the capture's terms.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "footprint/marking.h"
#include "footprint/region_table.hpp"

namespace kerncap::footprint {
namespace {

using format::MemKind;

format::Manifest three_regions() {
  format::Manifest m;
  m.regions = {{0, MemKind::Device, 0x20000, 4096, "mem/0.bin", 0, ""},
               {1, MemKind::Global, 0x90000, 10, "mem/1.bin", 0, "d_bias"},
               {2, MemKind::Device, 0x10000, 256, "mem/2.bin", 0, ""},
               {3, MemKind::Device, 0x50000, 0, "mem/3.bin", 0, ""}};
  return m;
}

// A host stand-in for the device buffers, wired like measure.cpp wires the real ones.
struct HostRun {
  explicit HostRun(const format::Manifest& m, std::vector<uint64_t> replay, uint64_t capacity = 4)
      : table(build_region_table(m, replay)), words(table.words), escapes(capacity) {
    t.abi_version = KC_FP_ABI_VERSION;
    t.region_count = static_cast<uint32_t>(table.entries.size());
    t.regions = reinterpret_cast<uint64_t>(table.entries.data());
    t.bitmaps = reinterpret_cast<uint64_t>(words.data());
    t.escapes = reinterpret_cast<uint64_t>(escapes.data());
    t.escape_capacity = capacity;
  }
  void read(uint64_t a, uint32_t n) { kc_fp_record(&t, 0x100, a, n, kc_fp_kind(KC_FP_SAN_READ, true)); }
  void write(uint64_t a, uint32_t n) { kc_fp_record(&t, 0x200, a, n, kc_fp_kind(KC_FP_SAN_WRITE, true)); }
  void atomic(uint64_t a, uint32_t n) { kc_fp_record(&t, 0x300, a, n, kc_fp_kind(KC_FP_SAN_WRITE, false)); }
  std::vector<format::RegionFootprint> result(const format::Manifest& m) { return collect_regions(m, table, words); }

  RegionTable table;
  std::vector<uint32_t> words;
  std::vector<kc_fp_escape> escapes;
  kc_fp_table t{};
};

TEST(FootprintTable, SortedByReplayAddressWithConsecutiveBitmaps) {
  const auto m = three_regions();
  const RegionTable t = build_region_table(m, std::vector<uint64_t>{0x20000, 0x90000, 0x10000, 0x50000});
  ASSERT_EQ(t.entries.size(), 3u);  // the empty region has nothing to mark
  EXPECT_EQ(t.manifest_index, (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(t.entries[0].base, 0x10000u);
  EXPECT_EQ(t.entries[0].read_words, 0u);
  EXPECT_EQ(t.entries[0].written_words, read_words(256));  // 64 granules: 2 words
  EXPECT_EQ(t.entries[0].rbw_words, 2u + written_words(256));
  EXPECT_EQ(t.entries[1].read_words, 2u + 8u + 2u);
  EXPECT_EQ(read_words(10), 1u);
  EXPECT_EQ(written_words(10), 1u);
  EXPECT_EQ(t.words, (2 + 8 + 2) + (32 + 128 + 32) + (1 + 1 + 1));
  EXPECT_EQ(t.find(0x10000), 0u);
  EXPECT_EQ(t.find(0x100ff), 0u);
  EXPECT_FALSE(t.find(0x10100).has_value());
  EXPECT_EQ(t.find(0x90009), 2u);
  EXPECT_FALSE(t.find(0x9000a).has_value());
  EXPECT_FALSE(t.find(0x50000).has_value());
}

TEST(FootprintTable, RelocatedRegionsAreMarkedAtTheirReplayAddress) {
  const auto m = three_regions();
  // Region 0 moved (relocation), region 1 is a module global at a driver-chosen address.
  HostRun run(m, {0x7000000, 0x6000000, 0x10000, 0x50000});
  run.read(0x7000000 + 8, 4);
  run.write(0x6000000, 4);
  const auto r = run.result(m);
  EXPECT_EQ(r[0].base, 0x20000u);  // reported at the captured address
  EXPECT_EQ(r[0].read_bytes(), 4u);
  EXPECT_TRUE(r[0].read.test(2));
  EXPECT_EQ(r[1].written_bytes(), 4u);
  EXPECT_EQ(r[1].global, "d_bias");
  EXPECT_EQ(run.t.escape_count, 0u);
}

TEST(FootprintTable, OverlappingRegionsAreRefused) {
  const auto m = three_regions();
  try {
    build_region_table(m, std::vector<uint64_t>{0x10000, 0x90000, 0x10080, 0x50000});
    ADD_FAILURE() << "overlap accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos);
  }
}

TEST(FootprintMarking, ReadThenWriteIsAnInputAndWriteThenReadIsNot) {
  const auto m = three_regions();
  HostRun run(m, {0x20000, 0x90000, 0x10000, 0x50000});
  run.read(0x10000, 4);  // c[0] += ... : read first
  run.write(0x10000, 4);
  run.write(0x10010, 4);  // tmp[4] = ...; later read back
  run.read(0x10010, 4);
  const auto r = run.result(m)[2];
  EXPECT_EQ(r.read_bytes(), 8u);
  EXPECT_EQ(r.written_bytes(), 8u);
  EXPECT_EQ(r.rbw_bytes(), 4u);
  EXPECT_TRUE(r.rbw.test(0));
  EXPECT_FALSE(r.rbw.test(4));
  EXPECT_EQ(r.write_only_bytes(), 4u);
}

TEST(FootprintMarking, VectorAndStraddlingAccessesMarkEveryGranule) {
  const auto m = three_regions();
  HostRun run(m, {0x20000, 0x90000, 0x10000, 0x50000});
  run.read(0x10000 + 32, 16);  // float4 load
  run.write(0x10000 + 62, 4);   // misaligned: bytes 62..65, granules 15 and 16
  const auto r = run.result(m)[2];
  EXPECT_EQ(r.read.count(), 4u);
  EXPECT_TRUE(r.read.test(8) && r.read.test(11));
  EXPECT_EQ(r.written_bytes(), 4u);
  EXPECT_TRUE(r.written.test(62) && r.written.test(65));
  EXPECT_FALSE(r.written.test(61) || r.written.test(66));
}

TEST(FootprintMarking, PartialWordWritesKeepTheirNeighboursInputs) {
  const auto m = three_regions();
  HostRun run(m, {0x20000, 0x90000, 0x10000, 0x50000});
  run.write(0x10000, 1);  // one byte of granule 0
  run.read(0x10000, 4);   // reads bytes 1..3 that were never written: an input
  run.write(0x10004, 2);
  run.write(0x10006, 2);  // granule 1 written in two halves
  run.read(0x10004, 4);   // fully written before: not an input
  const auto r = run.result(m)[2];
  EXPECT_TRUE(r.rbw.test(0));
  EXPECT_FALSE(r.rbw.test(1));
  EXPECT_EQ(r.written_bytes(), 5u);
  EXPECT_EQ(r.write_only_bytes(), 4u);  // byte 0 sits in an input granule
}

TEST(FootprintMarking, AtomicsReadAndWrite) {
  EXPECT_EQ(kc_fp_kind(KC_FP_SAN_WRITE, false), KC_FP_READ | KC_FP_WRITE | KC_FP_ATOMIC);
  EXPECT_EQ(kc_fp_kind(KC_FP_SAN_READ | KC_FP_SAN_WRITE, true), KC_FP_READ | KC_FP_WRITE | KC_FP_ATOMIC);
  EXPECT_EQ(kc_fp_kind(KC_FP_SAN_WRITE, true), KC_FP_WRITE);
  EXPECT_EQ(kc_fp_kind(KC_FP_SAN_READ, false), KC_FP_READ);
  EXPECT_EQ(kc_fp_kind(KC_FP_SAN_READ | KC_FP_SAN_PREFETCH, false), 0u);
  const auto m = three_regions();
  HostRun run(m, {0x20000, 0x90000, 0x10000, 0x50000});
  run.atomic(0x20000 + 40, 4);  // atomicAdd(&hist[10], 1)
  const auto r = run.result(m)[0];
  EXPECT_EQ(r.read_bytes(), 4u);
  EXPECT_EQ(r.written_bytes(), 4u);
  EXPECT_EQ(r.rbw_bytes(), 4u);
  EXPECT_EQ(r.write_only_bytes(), 0u);
}

TEST(FootprintMarking, AccessesOutsideEveryRegionEscapeAndAreBounded) {
  const auto m = three_regions();
  HostRun run(m, {0x20000, 0x90000, 0x10000, 0x50000}, 2);
  run.read(0x8000, 4);           // below every region
  run.write(0x10000 + 254, 4);   // last 2 bytes in, 2 past the end
  run.read(0x50000, 4);          // the empty region holds nothing
  run.read(0x10000 + 16, 4);     // inside: no escape
  EXPECT_EQ(run.t.escape_count, 3u);
  ASSERT_EQ(run.escapes.size(), 2u);
  const auto r = run.result(m)[2];
  EXPECT_EQ(r.written_bytes(), 2u);  // the in-region half still counts

  const format::Escape e0 = to_escape(run.escapes[0], m, run.table);
  EXPECT_EQ(e0.address, 0x8000u);
  EXPECT_EQ(e0.pc, 0x100u);
  EXPECT_TRUE(e0.read);
  EXPECT_FALSE(e0.write);
  EXPECT_NE(e0.nearest.find("32768 B before region 2"), std::string::npos) << e0.nearest;
  const format::Escape e1 = to_escape(run.escapes[1], m, run.table);
  EXPECT_TRUE(e1.write);
  EXPECT_NE(e1.nearest.find("runs 2 B past the end of region 2"), std::string::npos) << e1.nearest;
  const format::Escape e2 = to_escape({0x90010, 0, 4, KC_FP_READ}, m, run.table);
  EXPECT_NE(e2.nearest.find("6 B past the end of region 1 (global d_bias)"), std::string::npos) << e2.nearest;
}

TEST(FootprintMarking, AnAccessSpanningTwoAdjacentRegionsMarksBoth) {
  format::Manifest m;
  m.regions = {{0, MemKind::Device, 0x1000, 8, "", 0, ""}, {1, MemKind::Device, 0x1008, 8, "", 0, ""}};
  HostRun run(m, {0x1000, 0x1008});
  run.write(0x1004, 8);
  const auto r = run.result(m);
  EXPECT_EQ(r[0].written_bytes(), 4u);
  EXPECT_EQ(r[1].written_bytes(), 4u);
  EXPECT_EQ(run.t.escape_count, 0u);
}

}  // namespace
}  // namespace kerncap::footprint
