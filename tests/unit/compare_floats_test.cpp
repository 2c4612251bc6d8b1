// Bit-level decoding of the small float formats, against known values and an independent
// reference written with ldexp.
#include <gtest/gtest.h>

#include <cmath>

#include "compare/floats.hpp"

namespace kerncap::compare::floats {
namespace {

// Generic reference decoder for a sign/exponent/mantissa format with IEEE-style specials.
double reference(uint32_t bits, int exp_bits, int man_bits, bool ieee_specials) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const bool neg = (bits >> (exp_bits + man_bits)) & 1;
  const uint32_t exp = (bits >> man_bits) & ((1u << exp_bits) - 1);
  const uint32_t man = bits & ((1u << man_bits) - 1);
  const uint32_t exp_max = (1u << exp_bits) - 1;
  double v;
  if (ieee_specials && exp == exp_max)
    v = man ? NAN : INFINITY;
  else if (exp == 0)
    v = std::ldexp(static_cast<double>(man), 1 - bias - man_bits);
  else
    v = std::ldexp(static_cast<double>(man | (1u << man_bits)), static_cast<int>(exp) - bias - man_bits);
  return neg ? -v : v;
}

void expect_same(double got, double want, uint32_t bits) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << std::hex << bits;
    return;
  }
  EXPECT_EQ(got, want) << std::hex << bits;
  EXPECT_EQ(std::signbit(got), std::signbit(want)) << std::hex << bits;
}

TEST(CompareFloats, F16Exhaustive) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    expect_same(f16_to_double(static_cast<uint16_t>(b)), reference(b, 5, 10, true), b);
    EXPECT_EQ(F16::nan(static_cast<uint16_t>(b)), std::isnan(reference(b, 5, 10, true))) << b;
    EXPECT_EQ(F16::inf(static_cast<uint16_t>(b)), std::isinf(reference(b, 5, 10, true))) << b;
  }
}

TEST(CompareFloats, F16KnownValues) {
  EXPECT_EQ(f16_to_double(0x3c00), 1.0);
  EXPECT_EQ(f16_to_double(0xc000), -2.0);
  EXPECT_EQ(f16_to_double(0x7bff), 65504.0);
  EXPECT_EQ(f16_to_double(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(f16_to_double(0x0400), std::ldexp(1.0, -14));
  EXPECT_TRUE(std::signbit(f16_to_double(0x8000)));
  EXPECT_EQ(f16_to_double(0xfc00), -INFINITY);
}

TEST(CompareFloats, BF16Exhaustive) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    expect_same(bf16_to_double(static_cast<uint16_t>(b)), reference(b, 8, 7, true), b);
    EXPECT_EQ(BF16::nan(static_cast<uint16_t>(b)), std::isnan(reference(b, 8, 7, true))) << b;
    EXPECT_EQ(BF16::inf(static_cast<uint16_t>(b)), std::isinf(reference(b, 8, 7, true))) << b;
  }
  EXPECT_EQ(bf16_to_double(0x3f80), 1.0);
  EXPECT_EQ(bf16_to_double(0x4049), 3.140625);
}

TEST(CompareFloats, E5M2Exhaustive) {
  for (uint32_t b = 0; b < 0x100; ++b) {
    expect_same(e5m2_to_double(static_cast<uint8_t>(b)), reference(b, 5, 2, true), b);
    expect_same(E5M2::value(static_cast<uint8_t>(b)), reference(b, 5, 2, true), b);
    EXPECT_EQ(E5M2::nan(static_cast<uint8_t>(b)), std::isnan(reference(b, 5, 2, true))) << b;
    EXPECT_EQ(E5M2::inf(static_cast<uint8_t>(b)), std::isinf(reference(b, 5, 2, true))) << b;
  }
  EXPECT_EQ(e5m2_to_double(0x3c), 1.0);
  EXPECT_EQ(e5m2_to_double(0x7b), 57344.0);
  EXPECT_EQ(e5m2_to_double(0x7c), INFINITY);
  EXPECT_EQ(e5m2_to_double(0xfc), -INFINITY);
  EXPECT_TRUE(std::isnan(e5m2_to_double(0x7d)));
  EXPECT_EQ(e5m2_to_double(0x01), std::ldexp(1.0, -16));
}

TEST(CompareFloats, E4M3Exhaustive) {
  // E4M3 "fn": no infinities; only S.1111.111 is NaN, the rest of exponent 15 is normal.
  for (uint32_t b = 0; b < 0x100; ++b) {
    const bool is_nan = (b & 0x7f) == 0x7f;
    const double want = is_nan ? NAN : reference(b, 4, 3, false);
    expect_same(e4m3_to_double(static_cast<uint8_t>(b)), want, b);
    expect_same(E4M3::value(static_cast<uint8_t>(b)), want, b);
    EXPECT_EQ(E4M3::nan(static_cast<uint8_t>(b)), is_nan) << b;
    EXPECT_FALSE(E4M3::inf(static_cast<uint8_t>(b))) << b;
  }
  EXPECT_EQ(e4m3_to_double(0x38), 1.0);
  EXPECT_EQ(e4m3_to_double(0x7e), 448.0);
  EXPECT_EQ(e4m3_to_double(0xfe), -448.0);
  EXPECT_EQ(e4m3_to_double(0x78), 256.0);
  EXPECT_EQ(e4m3_to_double(0x08), std::ldexp(1.0, -6));
  EXPECT_EQ(e4m3_to_double(0x01), std::ldexp(1.0, -9));
  EXPECT_TRUE(std::isnan(e4m3_to_double(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_double(0xff)));
}

TEST(CompareFloats, F32AndF64Specials) {
  EXPECT_TRUE(F32::nan(0x7fc00000u));
  EXPECT_TRUE(F32::nan(0xff800001u));
  EXPECT_FALSE(F32::nan(0x7f800000u));
  EXPECT_TRUE(F32::inf(0xff800000u));
  EXPECT_FALSE(F32::inf(0x7f7fffffu));
  EXPECT_EQ(F32::value(0x3f800000u), 1.0);
  EXPECT_TRUE(F64::nan(0x7ff8000000000000ull));
  EXPECT_TRUE(F64::inf(0xfff0000000000000ull));
  EXPECT_FALSE(F64::inf(0x7fefffffffffffffull));
  EXPECT_EQ(F64::value(0x4000000000000000ull), 2.0);
}

}  // namespace
}  // namespace kerncap::compare::floats
