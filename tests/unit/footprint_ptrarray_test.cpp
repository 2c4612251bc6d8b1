// Strong validation through device arrays of pointers and tensor maps in device memory
// (issue 33 item 5): which spans probing finds from pointers held in region memory, which it
// leaves alone (tables the kernel reads), and what the PASS line says about probed bytes.
#include <gtest/gtest.h>

#include <cstring>

#include "replay/poison.hpp"
#include "replay/probe.hpp"
#include "replay/validate.hpp"

namespace kerncap::replay {
namespace {

// 0: the pointer array (64 B), 1: the grouped output (0x400 B), 2: an input (0x100 B),
// 3: a 128-byte "tensor map" in device memory.
format::Manifest grouped() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x10000, 0x40, "mem/0.bin", 0, ""},
               {1, format::MemKind::Device, 0x20000, 0x400, "mem/1.bin", 0, ""},
               {2, format::MemKind::Device, 0x30000, 0x100, "mem/2.bin", 0, ""},
               {3, format::MemKind::Device, 0x40000, 0x80, "mem/3.bin", 0, ""}};
  return m;
}

format::Footprint untouched(const format::Manifest& m) {
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

std::vector<uint8_t> words(std::initializer_list<std::pair<size_t, uint64_t>> at, size_t size) {
  std::vector<uint8_t> b(size, 0);
  for (auto [off, v] : at) std::memcpy(b.data() + off, &v, 8);
  return b;
}

// The kernel's parameters point only at the pointer array (which the sanitizer saw read);
// the array's four entries (one null, as CUTLASS leaves an empty group) start one span each.
TEST(PointerArrayProbe, SpansFromADeviceArrayOfPointers) {
  auto m = grouped();
  auto f = untouched(m);
  f.regions[0].read.set_range(0, 8);  // the array is loaded
  const auto params = words({{0, 0x10000}}, 8);
  EXPECT_TRUE(probe_candidates(m, params, f).empty());  // the parameters alone reach no output
  PointerMemory mem;
  mem.sources.push_back({0, words({{0, 0x20000}, {8, 0x20100}, {16, 0}, {24, 0x20300}}, 0x40)});
  EXPECT_EQ(probe_candidates(m, params, f, mem),
            (std::vector<ProbeSpan>{{1, 0, 0x100, 0}, {1, 0x100, 0x300, 0}, {1, 0x300, 0x400, 0}}));
}

// Words in region memory hold replay addresses (relocation applied): they are matched against
// where each region lies in the replay, the parameters against the captured bases.
TEST(PointerArrayProbe, MemoryWordsAreReplayAddresses) {
  auto m = grouped();
  auto f = untouched(m);
  PointerMemory mem;
  mem.replay_bases = {0x10000, 0x7f0000, 0x30000, 0x40000};  // region 1 moved
  mem.sources.push_back({0, words({{0, 0x7f0200}, {8, 0x20000}}, 0x40)});
  EXPECT_EQ(probe_candidates(m, {}, f, mem), (std::vector<ProbeSpan>{{1, 0x200, 0x400, 0}}));
}

// A tensor map in device memory: the TMA unit reads it, so the sanitizer saw no access, yet a
// poison there would make the kernel fault. Its global address starts a span in the output;
// the map itself holds a pointer and is not probed.
TEST(PointerArrayProbe, TensorMapInDeviceMemoryIsNotPoisoned) {
  auto m = grouped();
  auto f = untouched(m);
  const auto params = words({{0, 0x40000}}, 8);  // the kernel gets the map's global address
  EXPECT_EQ(probe_candidates(m, params, f), (std::vector<ProbeSpan>{{3, 0, 0x80}}));  // no memory scanned: old behaviour
  PointerMemory mem;
  mem.sources.push_back({3, words({{0, 0x20000}, {16, 0x0000000100000040}}, 0x80)});
  EXPECT_EQ(probe_candidates(m, params, f, mem), (std::vector<ProbeSpan>{{1, 0, 0x400, 3}}));
}

// A pointer into an input that the sanitizer saw read, and one word that merely looks like a
// pointer inside a span: the first is no candidate, the second starts its own span but the
// span holding it (in the scanned region) is a table.
TEST(PointerArrayProbe, TouchedAndPointerHoldingSpansAreSkipped) {
  auto m = grouped();
  auto f = untouched(m);
  f.regions[2].read.set(0);
  PointerMemory mem;
  mem.sources.push_back({0, words({{0, 0x30000}, {8, 0x20000}}, 0x40)});
  // Region 1's own bytes hold a pointer to its second half (a self-referencing workspace).
  mem.sources.push_back({1, words({{0x210, 0x20200}}, 0x400)});
  EXPECT_EQ(probe_candidates(m, {}, f, mem), (std::vector<ProbeSpan>{{1, 0, 0x200, 0}}));
}

// The same pointer found in the parameters and in memory: one span, attributed to the parameters.
TEST(PointerArrayProbe, ParamsWinAmongEqualStarts) {
  auto m = grouped();
  auto f = untouched(m);
  PointerMemory mem;
  mem.sources.push_back({0, words({{0, 0x20000}}, 0x40)});
  const auto params = words({{0, 0x20000}}, 8);
  const auto c = probe_candidates(m, params, f, mem);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), (ProbeSpan{1, 0, 0x400, kFromParams}));
}

TEST(PointerArrayProbe, LimitCountsSpans) {
  auto m = grouped();
  auto f = untouched(m);
  PointerMemory mem;
  mem.sources.push_back({0, words({{0, 0x20000}, {8, 0x20100}, {16, 0x20200}, {24, 0x20300}}, 0x40)});
  EXPECT_EQ(probe_candidates(m, {}, f, mem, uint64_t{1} << 30, 2).size(), 2u);
  EXPECT_TRUE(probe_candidates(m, {}, f, mem, 0x3ff).empty());  // the output is over the size limit
}

// The poison plan counts the bytes of regions whose writes probing proved; the PASS line and
// the verdict document say so, and "strong" never stands with nothing proven.
TEST(PointerArrayStrength, ProbedBytesAreNamed) {
  auto m = grouped();
  auto f = untouched(m);
  f.regions[1].written.set_range(0, 0x300);
  f.regions[1].probed = true;
  f.regions[2].written.set_range(0, 0x10);  // a plain store the sanitizer saw
  const PoisonPlan p = plan_poison(f, m);
  EXPECT_EQ(p.bytes, 0x310u);
  EXPECT_EQ(p.probed_bytes, 0x300u);
  EXPECT_EQ(p.probed_regions, 1u);

  Verdict v;
  for (const auto& r : m.regions) {
    RegionVerdict rv;
    rv.id = r.id;
    rv.size = r.size;
    v.regions.push_back(rv);
  }
  mark_strong(v, p);
  const std::string line = v.line();
  EXPECT_NE(line.find("strong: 784 B written by the replay verified in 2 region(s), 784 B of it poisoned first (768 B "
                      "in 1 region(s) whose writes probing proved"),
            std::string::npos)
      << line;
  EXPECT_EQ(v.to_json()["probed_poisoned_bytes"], 0x300u);

  // Nothing proven: never "strong".
  Verdict none;
  none.regions = v.regions;
  mark_strong(none, plan_poison(untouched(m), m));
  EXPECT_EQ(none.line().find("strong:"), std::string::npos) << none.line();
}

}  // namespace
}  // namespace kerncap::replay
