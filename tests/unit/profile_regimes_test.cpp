// A kernel's launches grouped into regimes (profile/regimes.hpp), from hand-made records:
// shapes, counts, time shares, the extract --dispatch of each regime's first launch, and
// what is left out (device launches, benchmarks, other kernels, regimes beyond max).
#include <gtest/gtest.h>

#include "profile/regimes.hpp"

using kerncap::format::KernelRecord;
using kerncap::format::ProcessRecords;
using namespace kerncap::profile;

namespace {

KernelRecord launch(uint32_t name, uint32_t corr, int32_t grid, uint64_t ns, int32_t smem = 0) {
  KernelRecord k;
  k.name_id = name;
  k.correlation = corr;
  k.start_ns = 1000 * corr;
  k.end_ns = k.start_ns + ns;
  k.grid = {grid, 1, 1};
  k.block = {256, 1, 1};
  k.dynamic_shared = smem;
  return k;
}

ProcessRecords process(int64_t pid) {
  ProcessRecords p;
  p.info.pid = pid;
  p.names = {"_Z4normPfi", "_Z5otherv"};
  return p;
}

}  // namespace

TEST(ProfileRegimes, GroupsByShapeWithSharesAndFirstDispatch) {
  ProcessRecords p = process(7);
  // Records arrive out of launch order (CUPTI flushes by buffer): correlation orders them.
  p.kernels = {launch(0, 5, 8, 100), launch(0, 1, 4096, 300), launch(1, 2, 1, 50), launch(0, 3, 8, 100),
               launch(0, 4, 4096, 300), launch(0, 6, 8, 100, 1024)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  EXPECT_EQ(s.pid, 7);
  EXPECT_EQ(s.launches, 5u);
  EXPECT_EQ(s.time_ns, 900u);
  EXPECT_EQ(s.app_time_ns, 950u);
  ASSERT_EQ(s.regimes.size(), 3u);
  // Largest share first: grid 4096 (600 ns), grid 8 (200 ns), grid 8 with shared memory (100 ns).
  EXPECT_EQ(s.regimes[0].grid[0], 4096);
  EXPECT_EQ(s.regimes[0].launches, 2u);
  EXPECT_EQ(s.regimes[0].dispatch, 0u);  // the kernel's first launch (correlation 1)
  EXPECT_NEAR(s.regimes[0].share, 600.0 / 900.0, 1e-12);
  EXPECT_EQ(s.regimes[1].grid[0], 8);
  EXPECT_EQ(s.regimes[1].dynamic_shared, 0);
  EXPECT_EQ(s.regimes[1].dispatch, 1u);  // correlation 3: the other kernel's launch is not counted
  EXPECT_EQ(s.regimes[1].launches, 2u);
  EXPECT_EQ(s.regimes[2].dynamic_shared, 1024);
  EXPECT_EQ(s.regimes[2].dispatch, 4u);
  EXPECT_EQ(s.dropped, 0u);
}

TEST(ProfileRegimes, DeviceLaunchesAndBenchmarksAreNotCounted) {
  ProcessRecords p = process(1);
  KernelRecord dev = launch(0, 1, 16, 500);
  dev.device_launched = true;
  KernelRecord bench = launch(0, 2, 16, 500);
  bench.benchmark = true;
  p.kernels = {dev, bench, launch(0, 3, 32, 10), launch(0, 4, 16, 20)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  EXPECT_EQ(s.uncounted, 2u);
  ASSERT_EQ(s.regimes.size(), 2u);
  EXPECT_EQ(s.regimes[0].grid[0], 16);
  EXPECT_EQ(s.regimes[0].dispatch, 1u);  // extract counts neither the device nor the benchmark launch
  EXPECT_EQ(s.regimes[1].dispatch, 0u);
}

TEST(ProfileRegimes, AtMostMaxTheRestCounted) {
  ProcessRecords p = process(1);
  for (uint32_t i = 0; i < 5; ++i) p.kernels.push_back(launch(0, i + 1, static_cast<int32_t>(i + 1), 100 * (i + 1)));
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 2);
  ASSERT_EQ(s.regimes.size(), 2u);
  EXPECT_EQ(s.regimes[0].grid[0], 5);
  EXPECT_EQ(s.regimes[1].grid[0], 4);
  EXPECT_EQ(s.dropped, 3u);
  EXPECT_EQ(s.dropped_launches, 3u);
  EXPECT_EQ(s.dropped_ns, 600u);
}

TEST(ProfileRegimes, TheFirstProcessThatLaunchedItOthersCounted) {
  ProcessRecords a = process(1);
  a.kernels = {launch(1, 1, 1, 5)};  // only the other kernel
  ProcessRecords b = process(2);
  b.kernels = {launch(0, 1, 2, 5)};
  ProcessRecords c = process(3);
  c.kernels = {launch(0, 1, 3, 5)};
  const RegimeSet s = find_regimes({a, b, c}, "_Z4normPfi", 8);
  EXPECT_EQ(s.pid, 2);
  EXPECT_EQ(s.other_processes, 1u);
  ASSERT_EQ(s.regimes.size(), 1u);
  EXPECT_EQ(s.regimes[0].grid[0], 2);
  EXPECT_TRUE(find_regimes({a}, "_Z4normPfi", 8).regimes.empty());
  EXPECT_TRUE(find_regimes({b}, "_Z4norm", 8).regimes.empty());  // an exact name, not a substring
}

namespace {

// A launch of _Z4normPfi at grid 264 (a capped grid-stride loop) whose signature is `sig`.
KernelRecord signed_launch(uint32_t corr, int32_t sig, uint64_t ns) {
  KernelRecord k = launch(0, corr, 264, ns);
  k.signature = sig;
  return k;
}

}  // namespace

TEST(ProfileRegimes, OneGridTwoSizesAreTwoRegimes) {
  ProcessRecords p = process(1);
  // scale(const float* x, float* y, int n, float a): params 0 and 1 are pointers (not in a
  // signature), 2 is n, 3 is a (the same everywhere).
  p.signatures = {{{2, 0, 4, 1u << 22}, {3, 0, 4, 0x3f000000}}, {{2, 0, 4, 1u << 20}, {3, 0, 4, 0x3f000000}}};
  p.kernels = {signed_launch(1, 0, 400), signed_launch(2, 1, 100), signed_launch(3, 0, 400),
               signed_launch(4, 1, 100), signed_launch(5, 1, 100)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  ASSERT_EQ(s.regimes.size(), 2u);
  EXPECT_EQ(s.regimes[0].grid, s.regimes[1].grid);
  EXPECT_EQ(s.regimes[0].launches, 2u);  // n = 4M: 800 ns
  EXPECT_EQ(s.regimes[0].dispatch, 0u);
  EXPECT_EQ(s.regimes[1].launches, 3u);  // n = 1M: 300 ns
  EXPECT_EQ(s.regimes[1].dispatch, 1u);
  ASSERT_EQ(s.regimes[0].params.size(), 2u);
  EXPECT_TRUE(s.regimes[0].params[0].varies);   // n
  EXPECT_FALSE(s.regimes[0].params[1].varies);  // a
  EXPECT_EQ(kerncap::format::varying_params_text(s.regimes[0].params), "param 2 = 4194304");
  EXPECT_EQ(kerncap::format::varying_params_text(s.regimes[1].params), "param 2 = 1048576");
  EXPECT_TRUE(signature_notes(s).empty());
}

TEST(ProfileRegimes, LaunchesOnOtherBuffersAreOneRegime) {
  // Two launches on different buffers have the same signature (pointer words are not in it:
  // capture_param_signature_test checks the library leaves them out), so one regime.
  ProcessRecords p = process(1);
  p.signatures = {{{2, 0, 4, 4096}}};
  p.kernels = {signed_launch(1, 0, 10), signed_launch(2, 0, 10), signed_launch(3, 0, 10)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  ASSERT_EQ(s.regimes.size(), 1u);
  EXPECT_EQ(s.regimes[0].launches, 3u);
  EXPECT_FALSE(s.regimes[0].params.at(0).varies);  // one regime: nothing tells it apart
}

TEST(ProfileRegimes, AWordWithTooManyValuesIsLeftOutOfTheKey) {
  ProcessRecords p = process(1);
  // param 2 is a size with two values, param 4 a step counter (a new value at every launch).
  for (uint32_t i = 0; i < 40; ++i) {
    p.signatures.push_back({{2, 0, 4, i % 2 ? 64u : 128u}, {4, 0, 8, 1000 + i}});
    p.kernels.push_back(signed_launch(i + 1, static_cast<int32_t>(i), 10));
  }
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  ASSERT_EQ(s.regimes.size(), 2u);
  EXPECT_EQ(s.regimes[0].launches, 20u);
  ASSERT_EQ(s.volatile_words.size(), 1u);
  EXPECT_EQ(s.volatile_words[0].slot, 4u);
  ASSERT_EQ(s.regimes[0].params.size(), 1u);  // only param 2 keys the regimes
  const auto notes = signature_notes(s);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("param 4 took more than 16 values"), std::string::npos) << notes[0];
}

TEST(ProfileRegimes, LaunchesWithoutSignatureAreGroupedByShape) {
  ProcessRecords p = process(1);
  p.signatures = {{{2, 0, 4, 64}}};
  KernelRecord graph = launch(0, 3, 264, 10);  // no signature (a graph's kernel)
  graph.graph_id = 1;
  p.kernels = {signed_launch(1, 0, 10), signed_launch(2, 0, 10), graph, launch(0, 4, 264, 10)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  ASSERT_EQ(s.regimes.size(), 2u);
  EXPECT_EQ(s.unsigned_launches, 2u);
  EXPECT_TRUE(s.regimes[0].signed_launches);
  EXPECT_FALSE(s.regimes[1].signed_launches);
  EXPECT_TRUE(s.regimes[1].params.empty());
  EXPECT_EQ(signature_notes(s).size(), 1u);
  // Records without any signature: shapes, as before signatures existed.
  ProcessRecords q = process(1);
  q.kernels = {launch(0, 1, 8, 10), launch(0, 2, 8, 10), launch(0, 3, 16, 10)};
  const RegimeSet t = find_regimes({q}, "_Z4normPfi", 8);
  EXPECT_EQ(t.regimes.size(), 2u);
  EXPECT_NE(signature_notes(t).at(0).find("its regimes are its launch shapes"), std::string::npos);
}

TEST(ProfileRegimes, TheCapturedLaunchMustHoldTheRegimesWords) {
  using kerncap::format::ParamSlot;
  using kerncap::format::RegimeParam;
  // scale(const float*, float*, int n, float a): slots at 0, 8, 16 (4 bytes), 20 (4 bytes).
  const std::vector<ParamSlot> slots = {{0, 8}, {8, 8}, {16, 4}, {20, 4}};
  std::vector<uint8_t> buffer(24, 0);
  buffer[16 + 1] = 0x10;  // n = 4096
  const std::vector<RegimeParam> params = {{2, 0, 4, 4096, true}};
  EXPECT_EQ(params_mismatch(params, slots, buffer), "");
  buffer[16 + 1] = 0x20;  // n = 8192
  EXPECT_EQ(params_mismatch(params, slots, buffer), "param 2 = 4096 in the profiled run, param 2 = 8192 in the captured one");
  EXPECT_NE(params_mismatch({{7, 0, 4, 1, true}}, slots, buffer).find("has 4 parameter(s)"), std::string::npos);
  EXPECT_NE(params_mismatch({{2, 0, 8, 1, true}}, slots, buffer).find("does not fit"), std::string::npos);
}

TEST(ProfileRegimes, AddressLikeWordsAreLeftOutOfTheKey) {
  // PyTorch's elementwise kernels take an offset calculator by value: 32-bit fields with
  // uninitialized padding beside them, so an 8-byte word reads 0x00007f68'00000006 (stack
  // bytes above the 6), and unused array entries hold stack addresses or leftovers. Such a
  // word must not split one shape into two regimes. 0x55555556'00000030 (a divider's magic
  // multiplier beside its divisor) is a real value: above the address range, kept.
  ProcessRecords p = process(1);
  const uint64_t magic = 0x5555555600000030ull;
  p.signatures = {{{0, 0, 4, 3072}, {1, 16, 8, magic}, {1, 24, 8, 0x00007f6800000006ull}, {1, 40, 8, 0x7fff1234abcdull}},
                  {{0, 0, 4, 3072}, {1, 16, 8, magic}, {1, 24, 8, 0x00007f6800000006ull}, {1, 40, 8, 328}}};
  p.kernels = {signed_launch(1, 0, 10), signed_launch(2, 1, 10), signed_launch(3, 0, 10)};
  const RegimeSet s = find_regimes({p}, "_Z4normPfi", 8);
  ASSERT_EQ(s.regimes.size(), 1u);  // not split by param 1+40
  EXPECT_EQ(s.regimes[0].launches, 3u);
  ASSERT_EQ(s.regimes[0].params.size(), 2u);  // n and the divider; both address-like words left out
  EXPECT_EQ(s.regimes[0].params[1].value, magic);
  ASSERT_EQ(s.volatile_words.size(), 2u);
  EXPECT_TRUE(s.volatile_words[0].address && s.volatile_words[1].address);
  const auto notes = signature_notes(s);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("param 1+24, param 1+40 held a host-address-like value"), std::string::npos) << notes[0];
  EXPECT_FALSE(address_like(1ull << 39));  // 512 GiB: could be a size
  EXPECT_TRUE(address_like(0x7ffd12345678ull));
  EXPECT_FALSE(address_like(magic));
}

TEST(ProfileRegimes, AWordWhoseUpperHalfDiffersBetweenRunsIsNotAMismatch) {
  using kerncap::format::ParamSlot;
  using kerncap::format::RegimeParam;
  const std::vector<ParamSlot> slots = {{0, 8}, {8, 8}};
  std::vector<uint8_t> buffer(16, 0);
  const uint64_t captured = 0x12340000'00000006ull, other_low = 0x12340000'00000007ull;
  for (int b = 0; b < 8; ++b) buffer[8 + b] = static_cast<uint8_t>(captured >> (8 * b));
  // Profiled 0x5678'0000'0006: padding above a 6 that differs between the runs.
  std::vector<RegimeParam> unstable;
  EXPECT_EQ(params_mismatch({{1, 0, 8, 0x56780000'00000006ull, true}}, slots, buffer, &unstable), "");
  ASSERT_EQ(unstable.size(), 1u);
  EXPECT_EQ(unstable[0].value, captured);
  // Upper halves equal, lower halves differ: a real difference.
  for (int b = 0; b < 8; ++b) buffer[8 + b] = static_cast<uint8_t>(other_low >> (8 * b));
  EXPECT_NE(params_mismatch({{1, 0, 8, captured, true}}, slots, buffer), "");
  // A small value against a padded one: a real difference (one upper half is zero).
  EXPECT_NE(params_mismatch({{1, 0, 8, 7, true}}, slots, buffer), "");
  // A word that tells no regime apart (varies false) may differ in any way: uninitialized
  // bytes (0 in one run, -136 in the next, as a PyTorch offset calculator's unused entry).
  unstable.clear();
  EXPECT_EQ(params_mismatch({{1, 0, 8, 0, false}}, slots, buffer, &unstable), "");
  EXPECT_EQ(unstable.size(), 1u);
  // Inside a struct parameter (slot 2: 120 bytes), any difference is an unset field's bytes;
  // a whole scalar parameter (slot 1 above) must match.
  const std::vector<ParamSlot> with_struct = {{0, 8}, {8, 8}, {16, 120}};
  std::vector<uint8_t> big(136, 0);
  big[16 + 104] = 0x78;
  unstable.clear();
  EXPECT_EQ(params_mismatch({{2, 104, 8, 0, true}}, with_struct, big, &unstable), "");
  EXPECT_EQ(unstable.size(), 1u);
  EXPECT_NE(params_mismatch({{1, 0, 8, 5, true}}, with_struct, big), "");
  EXPECT_TRUE(differs_between_runs_only(0x7f6800000006ull, 0x7fac00000006ull));
  EXPECT_FALSE(differs_between_runs_only(6, 0x7fac00000006ull));
}
