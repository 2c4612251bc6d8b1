// The comparison against the device's copy of the expected bytes (compare_plan.hpp
// plan_compare_equal): only blocks the device found different, or whose expected elements
// hold NaN or Inf, are read back; the comparator's result is the one feeding every byte gives,
// field for field (the device itself is simulated here: a block is "equal" when its bytes are).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compare/compare.hpp"
#include "replay/compare_plan.hpp"

using namespace kerncap::replay;
namespace compare = kerncap::compare;

namespace {

constexpr uint64_t kEqKiB = 1ull << 10;

// What kerncap_equal answers for g's blocks of `expected` and `actual` (piece-relative).
std::vector<uint32_t> simulated_equal(const CompareGrid& g, const std::vector<uint8_t>& expected,
                                      const std::vector<uint8_t>& actual) {
  std::vector<uint32_t> out(g.blocks());
  for (uint64_t c = 0; c < out.size(); ++c) {
    const ByteRange b = g.block_at(c);
    out[c] = std::memcmp(expected.data() + (b.begin - g.begin), actual.data() + (b.begin - g.begin),
                         b.end - b.begin) == 0
                 ? 0
                 : kMixed;
  }
  return out;
}

// validate.cpp's loop over the steps: identical steps counted, the others fed.
compare::Result fed_by_steps(const std::vector<CompareStep>& steps, const CompareGrid& g, compare::DType t,
                             compare::Tolerance tol, const std::vector<uint8_t>& expected,
                             const std::vector<uint8_t>& actual, uint64_t* read) {
  compare::Comparator cmp(t, tol);
  *read = 0;
  for (const CompareStep& st : steps) {
    const uint64_t at = st.offset - g.begin;
    if (st.identical()) {
      cmp.feed_identical(st.size, at);
    } else {
      cmp.feed(expected.data() + at, actual.data() + at, st.size, at);
      *read += st.size;
    }
  }
  return cmp.result();
}

// The host comparison of every byte, one window at a time.
compare::Result fed_whole(const CompareGrid& g, compare::DType t, compare::Tolerance tol,
                          const std::vector<uint8_t>& expected, const std::vector<uint8_t>& actual) {
  compare::Comparator cmp(t, tol);
  for (uint64_t off = 0; off < g.end - g.begin; off += g.step) {
    const uint64_t n = std::min(g.step, g.end - g.begin - off);
    cmp.feed(expected.data() + off, actual.data() + off, n, off);
  }
  return cmp.result();
}

void expect_same_result(const compare::Result& a, const compare::Result& b) {
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.elements, b.elements);
  EXPECT_EQ(a.mismatches, b.mismatches);
  EXPECT_EQ(a.differing_bytes, b.differing_bytes);
  EXPECT_EQ(a.first_bad_offset, b.first_bad_offset);
  EXPECT_EQ(a.max_abs_error, b.max_abs_error);
  EXPECT_EQ(a.max_rel_error, b.max_rel_error);
  EXPECT_EQ(a.nan_expected, b.nan_expected);
  EXPECT_EQ(a.nan_actual, b.nan_actual);
  EXPECT_EQ(a.inf_expected, b.inf_expected);
  EXPECT_EQ(a.inf_actual, b.inf_actual);
}

std::vector<uint8_t> random_floats(uint64_t bytes, uint32_t seed) {
  std::vector<uint8_t> out(bytes);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-10, 10);
  for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
    const float f = d(rng);
    std::memcpy(out.data() + i, &f, 4);
  }
  for (uint64_t i = bytes / 4 * 4; i < bytes; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

void put_float(std::vector<uint8_t>& v, uint64_t at, float f) { std::memcpy(v.data() + at, &f, 4); }

}  // namespace

TEST(CompareEqual, BlocksTheDeviceFindsEqualAreNotReadBack) {
  // A 4 MB fp32 output in 1 MiB windows, the replay wrong in two places of two blocks.
  const CompareGrid g{0, 4'000'000, 1ull << 20, compare::kBlockBytes};
  const std::vector<uint8_t> expected = random_floats(g.end, 1);
  std::vector<uint8_t> actual = expected;
  put_float(actual, 70 * kEqKiB, 1e6f);
  put_float(actual, 3'000'004, -3.5f);
  const compare::Tolerance tol = compare::default_tolerance(compare::DType::F32);
  const std::vector<uint32_t> eq = simulated_equal(g, expected, actual);
  const std::vector<CompareStep> steps = plan_compare_equal(g, eq, {});
  uint64_t read = 0;
  const compare::Result r = fed_by_steps(steps, g, compare::DType::F32, tol, expected, actual, &read);
  EXPECT_EQ(read, 2 * compare::kBlockBytes);  // the two blocks, nothing else
  expect_same_result(r, fed_whole(g, compare::DType::F32, tol, expected, actual));
  EXPECT_EQ(r.mismatches, 2u);
  EXPECT_EQ(*r.first_bad_offset, 70 * kEqKiB);
  // Steps cover the piece; read-back steps never cross a window, identical ones may.
  uint64_t at = g.begin;
  for (const CompareStep& st : steps) {
    EXPECT_EQ(st.offset, at);
    if (!st.identical()) {
      EXPECT_EQ((st.offset - g.begin) / g.step, (st.offset + st.size - 1 - g.begin) / g.step);
    }
    at += st.size;
  }
  EXPECT_EQ(at, g.end);
}

TEST(CompareEqual, NanAndInfBlocksAreReadBackSoTheirCountsStay) {
  // Identical NaN and Inf elements are counted by the comparator (nan_expected, nan_actual...)
  // and fail with nan_equal off: such blocks are never vouched for.
  const CompareGrid g{128, 128 + 600 * kEqKiB + 6, 256 * kEqKiB, compare::kBlockBytes};  // a piece off 0, a partial tail
  const uint64_t n = g.end - g.begin;
  std::vector<uint8_t> expected = random_floats(n, 7);
  put_float(expected, 4 * 1000, std::numeric_limits<float>::quiet_NaN());
  put_float(expected, 300 * kEqKiB, std::numeric_limits<float>::infinity());
  std::vector<uint8_t> actual = expected;
  put_float(actual, 500 * kEqKiB, 2.0f);
  actual[n - 1] ^= 1;  // the partial trailing element
  for (const bool nan_equal : {true, false}) {
    compare::Tolerance tol = compare::default_tolerance(compare::DType::F32);
    tol.nan_equal = nan_equal;
    const compare::Comparator cmp(compare::DType::F32, tol);
    const std::vector<uint8_t> plain =
        plain_blocks(g, expected.data(), [&](const uint8_t* b, uint64_t len) { return cmp.plain(b, len); });
    ASSERT_EQ(plain.size(), g.blocks());
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 0), 2);  // the NaN's block and the Inf's
    const std::vector<CompareStep> steps = plan_compare_equal(g, simulated_equal(g, expected, actual), plain);
    uint64_t read = 0;
    const compare::Result r = fed_by_steps(steps, g, compare::DType::F32, tol, expected, actual, &read);
    expect_same_result(r, fed_whole(g, compare::DType::F32, tol, expected, actual));
    EXPECT_EQ(r.nan_expected, 1u);
    EXPECT_EQ(r.inf_actual, 1u);
    EXPECT_EQ(r.mismatches, nan_equal ? 2u : 3u);
    EXPECT_LT(read, n / 2);
  }
}

TEST(CompareEqual, RandomDifferencesGiveTheHostsResultForEveryType) {
  std::mt19937 rng(42);
  for (const compare::DType t : {compare::DType::Bytes, compare::DType::F32, compare::DType::F16, compare::DType::BF16,
                                 compare::DType::F64, compare::DType::I32, compare::DType::U8}) {
    for (int round = 0; round < 4; ++round) {
      const uint64_t size = compare::dtype_size(t);
      const uint64_t begin = size * (rng() % 64);
      const CompareGrid g{begin, begin + 300 * kEqKiB + rng() % 4096, 128 * kEqKiB, compare::kBlockBytes};
      const uint64_t n = g.end - g.begin;
      std::vector<uint8_t> expected(n);
      for (auto& b : expected) b = static_cast<uint8_t>(rng() % 4 ? rng() : 0);
      std::vector<uint8_t> actual = expected;
      for (int k = 0; k < 5; ++k) actual[rng() % n] ^= static_cast<uint8_t>(1 + rng() % 255);
      const compare::Tolerance tol = compare::default_tolerance(t);
      const compare::Comparator cmp(t, tol);
      const std::vector<uint8_t> plain =
          plain_blocks(g, expected.data(), [&](const uint8_t* b, uint64_t len) { return cmp.plain(b, len); });
      uint64_t read = 0;
      const compare::Result r = fed_by_steps(plan_compare_equal(g, simulated_equal(g, expected, actual), plain), g, t,
                                             tol, expected, actual, &read);
      SCOPED_TRACE(compare::to_string(t));
      expect_same_result(r, fed_whole(g, t, tol, expected, actual));
    }
  }
}

TEST(CompareEqual, WithoutAnswersEveryWindowIsReadBack) {
  const CompareGrid g{0, 3 * (1ull << 20), 1ull << 20, compare::kBlockBytes};
  const std::vector<CompareStep> none = plan_compare_equal(g, {}, {});
  ASSERT_EQ(none.size(), 3u);
  for (const CompareStep& st : none) EXPECT_FALSE(st.identical());
  // Answers of another grid are not trusted either.
  EXPECT_EQ(plan_compare_equal(g, std::vector<uint32_t>(3, 0), {}), none);
  // All equal: one identical step over the whole piece.
  const std::vector<CompareStep> all = plan_compare_equal(g, std::vector<uint32_t>(g.blocks(), 0), {});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].equal);
  EXPECT_EQ(all[0].size, g.end);
}
