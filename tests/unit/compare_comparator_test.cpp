// The streaming comparator: every dtype, tolerance edges, NaN/Inf, chunking, speed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/error.hpp"
#include "compare/compare.hpp"

namespace kerncap::compare {
namespace {

template <typename T>
std::vector<uint8_t> raw(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

Result compare(DType t, const std::vector<uint8_t>& e, const std::vector<uint8_t>& a, Tolerance tol = {}) {
  EXPECT_EQ(e.size(), a.size());
  Comparator c(t, tol);
  c.feed(e.data(), a.data(), e.size(), 0);
  return c.result();
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- bytes ----------------------------------------------------------------

TEST(CompareBytes, IdenticalIsExact) {
  std::vector<uint8_t> e(1000, 7);
  Result r = compare(DType::Bytes, e, e);
  EXPECT_TRUE(r.exact());
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.bytes, 1000u);
  EXPECT_EQ(r.elements, 1000u);
  EXPECT_FALSE(r.first_bad_offset);
}

TEST(CompareBytes, CountsEveryDifferingByteIgnoringTolerance) {
  std::vector<uint8_t> e(100, 0), a(100, 0);
  a[3] = 1;
  a[4] = 1;
  a[99] = 0xff;
  Result r = compare(DType::Bytes, e, a, {.atol = 1000, .rtol = 1});
  EXPECT_EQ(r.differing_bytes, 3u);
  EXPECT_EQ(r.mismatches, 3u);
  EXPECT_FALSE(r.pass());
  ASSERT_TRUE(r.first_bad_offset);
  EXPECT_EQ(*r.first_bad_offset, 3u);
}

TEST(CompareBytes, AgreesWithNaiveCountOnRandomData) {
  // Exercises the 8-bytes-at-a-time walk: odd sizes, block edges, runs of differences.
  std::mt19937_64 rng(42);
  for (size_t n : {1u, 7u, 8u, 9u, 4095u, 65535u, 65536u, 65537u, 200003u}) {
    std::vector<uint8_t> e(n), a(n);
    for (auto& b : e) b = static_cast<uint8_t>(rng());
    a = e;
    const size_t flips = 1 + rng() % 64;
    for (size_t k = 0; k < flips; ++k) a[rng() % n] ^= static_cast<uint8_t>(1 + rng() % 255);
    uint64_t want = 0;
    std::optional<uint64_t> first;
    for (size_t i = 0; i < n; ++i)
      if (e[i] != a[i]) {
        ++want;
        if (!first) first = i;
      }
    Result r = compare(DType::Bytes, e, a);
    EXPECT_EQ(r.differing_bytes, want) << n;
    EXPECT_EQ(r.first_bad_offset, first) << n;
  }
}

TEST(CompareBytes, EverySingleBitFlipIsOneByte) {
  std::vector<uint8_t> e(24, 0x5a);
  for (size_t byte = 0; byte < e.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      auto a = e;
      a[byte] ^= static_cast<uint8_t>(1 << bit);
      Result r = compare(DType::Bytes, e, a);
      EXPECT_EQ(r.differing_bytes, 1u) << byte << ":" << bit;
      EXPECT_EQ(r.first_bad_offset, std::optional<uint64_t>(byte)) << byte << ":" << bit;
      a[(byte + 9) % e.size()] = 0xa5;  // every bit of a second byte
      EXPECT_EQ(compare(DType::Bytes, e, a).differing_bytes, 2u) << byte << ":" << bit;
    }
}

TEST(CompareBytes, FirstBadOffsetAcrossChunks) {
  const size_t n = 1 << 20, chunk = 4096;
  std::vector<uint8_t> e(n, 1), a(n, 1);
  a[300001] = 2;
  a[700000] = 2;
  Comparator c(DType::Bytes);
  for (size_t off = 0; off < n; off += chunk) c.feed(e.data() + off, a.data() + off, chunk, off);
  ASSERT_TRUE(c.result().first_bad_offset);
  EXPECT_EQ(*c.result().first_bad_offset, 300001u);
  EXPECT_EQ(c.result().bytes, n);
  EXPECT_EQ(c.result().mismatches, 2u);

  // Chunks fed out of order still report the lowest offset.
  Comparator back(DType::Bytes);
  for (size_t off = n; off > 0; off -= chunk)
    back.feed(e.data() + off - chunk, a.data() + off - chunk, chunk, off - chunk);
  EXPECT_EQ(back.result().first_bad_offset, std::optional<uint64_t>(300001));
}

TEST(CompareBytes, SixtyFourMiBIsMemcmpFast) {
  const size_t n = 64u << 20;
  std::vector<uint8_t> e(n), a;
  for (size_t i = 0; i < n; ++i) e[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  a = e;
  a[n - 1] ^= 1;
  const auto t0 = std::chrono::steady_clock::now();
  Comparator c(DType::Bytes);
  for (size_t off = 0; off < n; off += 8u << 20) c.feed(e.data() + off, a.data() + off, 8u << 20, off);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(c.result().differing_bytes, 1u);
  EXPECT_EQ(c.result().first_bad_offset, std::optional<uint64_t>(n - 1));
  // memcmp runs at many GB/s; a byte-at-a-time loop over 64 MiB would take far longer.
  EXPECT_LT(s, 0.25) << "64 MiB byte-exact compare took " << s << " s";
}

TEST(CompareFloat, SixtyFourMiBIdenticalFp32IsFast) {
  const size_t count = 16u << 20;
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(i) * 0.5f;
  v[12345] = std::numeric_limits<float>::quiet_NaN();
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  const auto t0 = std::chrono::steady_clock::now();
  Comparator c(DType::F32, default_tolerance(DType::F32));
  c.feed(p, p, count * 4, 0);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(c.result().exact());
  EXPECT_EQ(c.result().nan_expected, 1u);
  EXPECT_EQ(c.result().nan_actual, 1u);
  EXPECT_LT(s, 0.5) << "64 MiB identical fp32 compare took " << s << " s";
}

// ---- floats: tolerance rule ----------------------------------------------

TEST(CompareFloat, AbsoluteToleranceEdge) {
  const Tolerance tol{.atol = 0.5, .rtol = 0};
  EXPECT_TRUE(compare(DType::F64, raw<double>({1.0}), raw<double>({1.5}), tol).pass());
  EXPECT_TRUE(compare(DType::F64, raw<double>({1.0}), raw<double>({0.5}), tol).pass());
  EXPECT_FALSE(compare(DType::F64, raw<double>({1.0}), raw<double>({std::nextafter(1.5, 2.0)}), tol).pass());
}

TEST(CompareFloat, RelativeToleranceEdgeUsesExpectedMagnitude) {
  const Tolerance tol{.atol = 0, .rtol = 0.25};
  EXPECT_TRUE(compare(DType::F64, raw<double>({-4.0}), raw<double>({-5.0}), tol).pass());
  EXPECT_FALSE(compare(DType::F64, raw<double>({-4.0}), raw<double>({std::nextafter(-5.0, -6.0)}), tol).pass());
  // |e| is the scale, not |a|: e = 4, a = 5.2 has |a - e| = 1.2 > 0.25 * 4.
  EXPECT_FALSE(compare(DType::F64, raw<double>({4.0}), raw<double>({5.2}), tol).pass());
}

TEST(CompareFloat, AbsoluteAndRelativeAdd) {
  const Tolerance tol{.atol = 1.0, .rtol = 0.5};  // at e = -2: 1 + 0.5 * 2 = 2
  EXPECT_TRUE(compare(DType::F64, raw<double>({-2.0}), raw<double>({0.0}), tol).pass());
  EXPECT_FALSE(compare(DType::F64, raw<double>({-2.0}), raw<double>({0.25}), tol).pass());
}

TEST(CompareFloat, MaxErrorsAndRelativeAtZeroUsesAbsolute) {
  Result r = compare(DType::F32, raw<float>({2.0f, 0.0f, 8.0f}), raw<float>({2.5f, 0.75f, 8.0f}),
                     {.atol = 1, .rtol = 0});
  EXPECT_TRUE(r.pass());
  EXPECT_FALSE(r.exact());
  EXPECT_DOUBLE_EQ(r.max_abs_error, 0.75);
  EXPECT_DOUBLE_EQ(r.max_rel_error, 0.75);  // from e = 0: |a - e| itself
  r = compare(DType::F32, raw<float>({2.0f, 4.0f}), raw<float>({2.5f, 4.0f}));
  EXPECT_DOUBLE_EQ(r.max_rel_error, 0.25);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.first_bad_offset, std::optional<uint64_t>(0));
}

TEST(CompareFloat, SignedZeroIsEqualButNotExact) {
  Result r = compare(DType::F32, raw<float>({0.0f, 1.0f}), raw<float>({-0.0f, 1.0f}));
  EXPECT_TRUE(r.pass());
  EXPECT_FALSE(r.exact());
  EXPECT_EQ(r.differing_bytes, 1u);  // only the byte holding the sign bit
  EXPECT_EQ(r.max_abs_error, 0.0);
}

// ---- floats: NaN and Inf ---------------------------------------------------

TEST(CompareFloat, NaNAgainstNaN) {
  // Different payloads: bytes differ, values are both NaN.
  auto e = raw<uint32_t>({0x7fc00000u, 0x3f800000u});
  auto a = raw<uint32_t>({0xffc00001u, 0x3f800000u});
  Result r = compare(DType::F32, e, a, {.nan_equal = true});
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.nan_expected, 1u);
  EXPECT_EQ(r.nan_actual, 1u);
  r = compare(DType::F32, e, a, {.nan_equal = false});
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.first_bad_offset, std::optional<uint64_t>(0));
  // Byte-identical NaNs still fail when NaN must not equal NaN.
  r = compare(DType::F32, e, e, {.nan_equal = false});
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.nan_expected, 1u);
  EXPECT_EQ(r.nan_actual, 1u);
}

TEST(CompareFloat, NaNAgainstNumberFailsWhateverTheTolerance) {
  const Tolerance huge{.atol = 1e300, .rtol = 1e300};
  Result r = compare(DType::F64, raw<double>({1.0, kNaN}), raw<double>({kNaN, 1.0}), huge);
  EXPECT_EQ(r.mismatches, 2u);
  EXPECT_EQ(r.nan_expected, 1u);
  EXPECT_EQ(r.nan_actual, 1u);
  EXPECT_EQ(r.max_abs_error, 0.0);  // NaN never enters the error maxima
}

TEST(CompareFloat, InfMustMatchExactly) {
  const Tolerance huge{.atol = 1e300, .rtol = 1e300};
  EXPECT_TRUE(compare(DType::F64, raw<double>({kInf}), raw<double>({kInf}), huge).pass());
  EXPECT_FALSE(compare(DType::F64, raw<double>({kInf}), raw<double>({-kInf}), huge).pass());
  EXPECT_FALSE(compare(DType::F64, raw<double>({kInf}), raw<double>({1e308}), huge).pass());
  Result r = compare(DType::F64, raw<double>({1e308, -kInf}), raw<double>({kInf, -kInf}), huge);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.inf_expected, 1u);
  EXPECT_EQ(r.inf_actual, 2u);
  EXPECT_EQ(r.first_bad_offset, std::optional<uint64_t>(0));
}

TEST(CompareFloat, SpecialsCountedInIdenticalBlocks) {
  std::vector<float> v(100000, 1.0f);
  v[10] = std::numeric_limits<float>::quiet_NaN();
  v[70000] = -std::numeric_limits<float>::infinity();
  v[99999] = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> e(v.size() * 4);
  std::memcpy(e.data(), v.data(), e.size());
  Result r = compare(DType::F32, e, e);
  EXPECT_TRUE(r.exact());
  EXPECT_EQ(r.nan_expected, 1u);
  EXPECT_EQ(r.nan_actual, 1u);
  EXPECT_EQ(r.inf_expected, 2u);
  EXPECT_EQ(r.inf_actual, 2u);
  EXPECT_EQ(r.elements, 100000u);
}

// Byte-identical blocks look for NaN/Inf 8 bytes at a time; every type, every lane, and a
// tail that is not a multiple of 8 bytes.
template <typename Bits>
void expect_specials_found(DType t, Bits one, Bits nan, std::optional<Bits> inf) {
  SCOPED_TRACE(to_string(t));
  for (size_t pos : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{500}, size_t{1000}}) {
    std::vector<Bits> v(1001, one);  // 1001 elements: the byte size is not a multiple of 8
    v[pos] = nan;
    if (inf) v[(pos + 7) % v.size()] = *inf;
    std::vector<uint8_t> e(v.size() * sizeof(Bits));
    std::memcpy(e.data(), v.data(), e.size());
    Result r = compare(t, e, e);
    EXPECT_EQ(r.nan_expected, 1u) << pos;
    EXPECT_EQ(r.nan_actual, 1u) << pos;
    EXPECT_EQ(r.inf_expected, inf ? 1u : 0u) << pos;
    EXPECT_TRUE(r.pass());
    r = compare(t, e, e, {.nan_equal = false});
    EXPECT_EQ(r.mismatches, 1u) << pos;
    EXPECT_EQ(r.first_bad_offset, std::optional<uint64_t>(pos * sizeof(Bits)));
  }
}

TEST(CompareFloat, IdenticalBlocksFindEverySpecial) {
  expect_specials_found<uint64_t>(DType::F64, 0x3ff0000000000000ull, 0x7ff8000000000001ull, 0xfff0000000000000ull);
  expect_specials_found<uint32_t>(DType::F32, 0x3f800000u, 0xffc00000u, 0x7f800000u);
  expect_specials_found<uint16_t>(DType::F16, 0x3c00, 0x7c01, 0xfc00);
  expect_specials_found<uint16_t>(DType::BF16, 0x3f80, 0xffc1, 0x7f80);
  expect_specials_found<uint8_t>(DType::F8E4M3, 0x38, 0x7f, std::nullopt);
  expect_specials_found<uint8_t>(DType::F8E4M3, 0x38, 0xff, std::nullopt);
  expect_specials_found<uint8_t>(DType::F8E5M2, 0x3c, 0x7d, 0xfc);
}

TEST(CompareFloat, LargestFiniteValuesAreNotSpecials) {
  const std::pair<DType, std::vector<uint8_t>> cases[] = {
      {DType::F64, raw<uint64_t>({0x7fefffffffffffffull, 0xffefffffffffffffull})},
      {DType::F32, raw<uint32_t>({0x7f7fffffu, 0xff7fffffu})},
      {DType::F16, raw<uint16_t>({0x7bff, 0xfbff, 0x7bff, 0xfbff})},
      {DType::BF16, raw<uint16_t>({0x7f7f, 0xff7f, 0x7f7f, 0xff7f})},
      {DType::F8E4M3, raw<uint8_t>({0x7e, 0xfe, 0x78, 0xf9, 0x7e, 0xfe, 0x7e, 0xfe, 0x7d})},  // 448 and friends
      {DType::F8E5M2, raw<uint8_t>({0x7b, 0xfb, 0x7b, 0xfb, 0x7b, 0xfb, 0x7b, 0xfb})},
  };
  for (const auto& [t, e] : cases) {
    Result r = compare(t, e, e);
    EXPECT_EQ(r.nan_expected + r.inf_expected, 0u) << to_string(t);
  }
}

// ---- each float type -------------------------------------------------------

struct OneUlp {
  DType type;
  std::vector<uint8_t> e, a;
  double diff;  // exact |a - e|
  std::vector<uint8_t> nan;
};

TEST(CompareFloat, EveryFloatTypeDecodesItsBits) {
  const OneUlp cases[] = {
      {DType::F64, raw<double>({1.0}), raw<double>({1.0 + 0x1p-52}), 0x1p-52, raw<uint64_t>({0x7ff8000000000000ull})},
      {DType::F32, raw<uint32_t>({0x3f800000u}), raw<uint32_t>({0x3f800001u}), 0x1p-23, raw<uint32_t>({0x7fc00000u})},
      {DType::F16, raw<uint16_t>({0x3c00}), raw<uint16_t>({0x3c01}), 0x1p-10, raw<uint16_t>({0x7e00})},
      {DType::BF16, raw<uint16_t>({0x3f80}), raw<uint16_t>({0x3f81}), 0x1p-7, raw<uint16_t>({0x7fc0})},
      {DType::F8E4M3, raw<uint8_t>({0x38}), raw<uint8_t>({0x39}), 0.125, raw<uint8_t>({0x7f})},
      {DType::F8E5M2, raw<uint8_t>({0x3c}), raw<uint8_t>({0x3d}), 0.25, raw<uint8_t>({0x7e})},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(to_string(c.type));
    Result r = compare(c.type, c.e, c.a);
    EXPECT_FALSE(r.pass());
    EXPECT_EQ(r.max_abs_error, c.diff);
    EXPECT_EQ(r.max_rel_error, c.diff);  // e = 1
    EXPECT_EQ(r.elements, 1u);
    EXPECT_TRUE(compare(c.type, c.e, c.a, {.atol = c.diff}).pass());
    EXPECT_FALSE(compare(c.type, c.e, c.a, {.atol = c.diff * 0.999}).pass());
    // One ulp at 1.0 is within the type's default tolerance.
    EXPECT_TRUE(compare(c.type, c.e, c.a, default_tolerance(c.type)).pass());
    Result n = compare(c.type, c.nan, c.e);
    EXPECT_EQ(n.nan_expected, 1u);
    EXPECT_FALSE(n.pass());
  }
}

// Every finite value against its neighbour one step away from zero: the default tolerance
// must accept a result that merely rounded the other way.
template <typename Bits>
void expect_one_step_passes(DType t) {
  SCOPED_TRACE(to_string(t));
  const uint64_t sign = uint64_t{1} << (8 * sizeof(Bits) - 1);
  uint64_t checked = 0;
  for (uint64_t b = 0; b < sign - 1; ++b) {
    for (uint64_t s : {uint64_t{0}, sign}) {
      const Bits e = static_cast<Bits>(b | s), a = static_cast<Bits>((b + 1) | s);
      Comparator probe(t);
      probe.feed(reinterpret_cast<const uint8_t*>(&e), reinterpret_cast<const uint8_t*>(&a), sizeof(Bits), 0);
      const Result& p = probe.result();
      if (p.nan_expected || p.nan_actual || p.inf_expected || p.inf_actual) continue;
      Comparator c(t, default_tolerance(t));
      c.feed(reinterpret_cast<const uint8_t*>(&e), reinterpret_cast<const uint8_t*>(&a), sizeof(Bits), 0);
      ASSERT_TRUE(c.result().pass()) << std::hex << "0x" << uint64_t{e} << " vs 0x" << uint64_t{a} << ": "
                                     << summary(c.result());
      ++checked;
    }
  }
  EXPECT_GT(checked, sign);  // most patterns are finite
}

TEST(CompareFloat, DefaultToleranceAcceptsOneStep) {
  expect_one_step_passes<uint8_t>(DType::F8E4M3);
  expect_one_step_passes<uint8_t>(DType::F8E5M2);
  expect_one_step_passes<uint16_t>(DType::F16);
  expect_one_step_passes<uint16_t>(DType::BF16);
}

TEST(CompareFloat, E4M3TopOfRangeIsNotInfinity) {
  // 0x7e is 448 in E4M3 (no inf); 0x7f is NaN. 448 vs 416 (0x7d) is a finite difference.
  Result r = compare(DType::F8E4M3, raw<uint8_t>({0x7e}), raw<uint8_t>({0x7d}));
  EXPECT_EQ(r.inf_expected, 0u);
  EXPECT_EQ(r.max_abs_error, 32.0);
  // The same byte in E5M2 is a NaN / Inf.
  r = compare(DType::F8E5M2, raw<uint8_t>({0x7c}), raw<uint8_t>({0x7c}));
  EXPECT_EQ(r.inf_expected, 1u);
}

// ---- integers ---------------------------------------------------------------

TEST(CompareInt, ExactUnlessAtol) {
  auto e = raw<int32_t>({-5, 7}), a = raw<int32_t>({-3, 7});
  EXPECT_FALSE(compare(DType::I32, e, a).pass());
  EXPECT_TRUE(compare(DType::I32, e, a, {.atol = 2}).pass());
  EXPECT_FALSE(compare(DType::I32, e, a, {.atol = 1.9}).pass());
  // A relative tolerance does not loosen integers.
  EXPECT_FALSE(compare(DType::I32, raw<int32_t>({1000}), raw<int32_t>({1001}), {.rtol = 0.5}).pass());
  Result r = compare(DType::I32, e, a);
  EXPECT_EQ(r.max_abs_error, 2.0);
  EXPECT_DOUBLE_EQ(r.max_rel_error, 0.4);
  EXPECT_EQ(r.differing_bytes, 1u);
}

TEST(CompareInt, DifferencesAreExactAtTheExtremes) {
  Result r = compare(DType::I64, raw<int64_t>({INT64_MIN}), raw<int64_t>({INT64_MAX}));
  EXPECT_EQ(r.max_abs_error, 0x1p64);  // 2^64 - 1 rounds to 2^64 as a double
  EXPECT_FALSE(r.pass());
  // Near 2^62 a double cannot tell neighbours apart; the integer difference can.
  const int64_t big = (int64_t{1} << 62) + 1;
  r = compare(DType::I64, raw<int64_t>({big}), raw<int64_t>({big + 1}), {.atol = 1});
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.max_abs_error, 1.0);
  EXPECT_FALSE(compare(DType::I64, raw<int64_t>({big}), raw<int64_t>({big + 2}), {.atol = 1}).pass());
  EXPECT_EQ(compare(DType::U64, raw<uint64_t>({0}), raw<uint64_t>({UINT64_MAX})).max_abs_error, 0x1p64);
  EXPECT_EQ(compare(DType::I8, raw<int8_t>({-128}), raw<int8_t>({127})).max_abs_error, 255.0);
  EXPECT_EQ(compare(DType::U8, raw<uint8_t>({255}), raw<uint8_t>({0})).max_abs_error, 255.0);
  EXPECT_EQ(compare(DType::I16, raw<int16_t>({-32768}), raw<int16_t>({32767})).max_abs_error, 65535.0);
  EXPECT_EQ(compare(DType::U16, raw<uint16_t>({1}), raw<uint16_t>({65535})).max_abs_error, 65534.0);
  EXPECT_EQ(compare(DType::U32, raw<uint32_t>({0}), raw<uint32_t>({4000000000u})).max_abs_error, 4e9);
}

TEST(CompareInt, FirstBadOffsetIsTheElementStart) {
  auto e = raw<uint32_t>({1, 2, 3, 4}), a = raw<uint32_t>({1, 2, 0x03000003u, 4});
  Result r = compare(DType::U32, e, a);
  EXPECT_EQ(r.first_bad_offset, std::optional<uint64_t>(8));  // not 11, where the byte differs
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.elements, 4u);
}

// ---- chunking ----------------------------------------------------------------

TEST(CompareChunks, FirstBadElementAcrossChunks) {
  const size_t count = 100000;
  std::vector<float> e(count), a;
  for (size_t i = 0; i < count; ++i) e[i] = static_cast<float>(i);
  a = e;
  a[50000] += 1;
  a[70000] += 1;
  const auto* pe = reinterpret_cast<const uint8_t*>(e.data());
  const auto* pa = reinterpret_cast<const uint8_t*>(a.data());
  Comparator c(DType::F32);
  for (size_t off = 0; off < count * 4; off += 4096) {
    const size_t n = std::min<size_t>(4096, count * 4 - off);
    c.feed(pe + off, pa + off, n, off);
  }
  EXPECT_EQ(c.result().first_bad_offset, std::optional<uint64_t>(200000));
  EXPECT_EQ(c.result().mismatches, 2u);
  EXPECT_EQ(c.result().elements, count);
  EXPECT_EQ(c.result().max_abs_error, 1.0);
}

TEST(CompareChunks, TrailingPartialElementIsByteExact) {
  // 10 bytes of fp32: two whole elements and 2 bytes that are no value at all.
  std::vector<uint8_t> e = raw<float>({1.0f, 2.0f}), a = raw<float>({1.0f, 2.0f + 1e-7f});
  e.insert(e.end(), {0xaa, 0xbb});
  a.insert(a.end(), {0xaa, 0xbb});
  Result r = compare(DType::F32, e, a, default_tolerance(DType::F32));
  EXPECT_TRUE(r.pass());
  EXPECT_EQ(r.elements, 3u);
  EXPECT_EQ(r.bytes, 10u);
  a[9] = 0xbc;
  r = compare(DType::F32, e, a, default_tolerance(DType::F32));
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.first_bad_offset, std::optional<uint64_t>(8));
  EXPECT_GE(r.differing_bytes, 1u);

  // Fed as two chunks: the partial element rides in the last one.
  Comparator c(DType::F32, default_tolerance(DType::F32));
  c.feed(e.data(), a.data(), 4, 0);
  c.feed(e.data() + 4, a.data() + 4, 6, 4);
  EXPECT_EQ(c.result().first_bad_offset, std::optional<uint64_t>(8));
  EXPECT_EQ(c.result().elements, 3u);
}

TEST(CompareChunks, ContractViolationsAreInternalErrors) {
  std::vector<uint8_t> buf(16, 0);
  Comparator c(DType::F64);
  c.feed(buf.data(), buf.data(), 12, 0);  // ends inside an element: must be the last chunk
  try {
    c.feed(buf.data(), buf.data(), 8, 16);
    FAIL() << "a chunk after a partial element was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
  }
  Comparator d(DType::F32);
  EXPECT_THROW(d.feed(buf.data(), buf.data(), 8, 2), Error);  // offset splits an element
}

}  // namespace
}  // namespace kerncap::compare
