// feed_identical stands for feeding identical bytes of one plain value: the device compared
// them (replay/compare_plan.hpp), and the verdict must be the one the host walk gives.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "compare/compare.hpp"

using namespace kerncap::compare;

namespace {

void expect_same(const Result& a, const Result& b) {
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

}  // namespace

TEST(CompareIdentical, MatchesFeedingTheBytesForEveryTypeAndFill) {
  // A differing chunk first, then identical fill bytes, then a partial element at the end.
  const uint64_t n = 3 * kBlockBytes + 5;
  for (DType t : {DType::Bytes, DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2,
                  DType::I8, DType::I32, DType::U64}) {
    for (uint8_t value : {uint8_t{0}, uint8_t{0xCB}}) {
      Comparator host(t, default_tolerance(t)), device(t, default_tolerance(t));
      ASSERT_TRUE(host.plain(value)) << to_string(t) << " " << int{value};
      std::vector<uint8_t> e(kBlockBytes, 0x3c), a(kBlockBytes, 0x3c);
      a[100] = 0x3d;
      host.feed(e.data(), a.data(), kBlockBytes, 0);
      device.feed(e.data(), a.data(), kBlockBytes, 0);
      std::vector<uint8_t> fill(n - kBlockBytes, value);
      host.feed(fill.data(), fill.data(), fill.size(), kBlockBytes);
      device.feed_identical(fill.size(), kBlockBytes);
      expect_same(host.result(), device.result());
    }
  }
}

TEST(CompareIdentical, NaNAndInfFillsAreNotPlain) {
  EXPECT_FALSE(Comparator(DType::F32).plain(0xFF));     // 0xFFFFFFFF: NaN
  EXPECT_FALSE(Comparator(DType::F8E4M3).plain(0x7F));  // e4m3's NaN
  EXPECT_FALSE(Comparator(DType::F16).plain(0x7C) && Comparator(DType::F16).plain(0xFF));
  EXPECT_TRUE(Comparator(DType::F32).plain(0));
  EXPECT_TRUE(Comparator(DType::I32).plain(0xFF));
  EXPECT_TRUE(Comparator(DType::Bytes).plain(0xFF));
}

TEST(CompareIdentical, KeepsTheChunkRules) {
  Comparator c(DType::F32);
  EXPECT_THROW(c.feed_identical(8, 2), std::exception);  // not on an element
  c.feed_identical(6, 0);                                // ends in a partial element
  EXPECT_EQ(c.result().elements, 2u);
  EXPECT_THROW(c.feed_identical(4, 8), std::exception);
}

TEST(CompareIdentical, PlainBytesOfAnyValuesAreThoseWithoutNaNOrInf) {
  std::vector<uint8_t> b(4096);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7 % 61);  // finite floats of every width
  for (DType t : {DType::Bytes, DType::F64, DType::F32, DType::F16, DType::BF16, DType::I16, DType::U32}) {
    EXPECT_TRUE(Comparator(t, default_tolerance(t)).plain(b.data(), b.size())) << to_string(t);
    EXPECT_TRUE(Comparator(t).plain(b.data(), 7)) << to_string(t);  // a partial element
  }
  const float inf = 1.0f / 0.0f;
  std::memcpy(b.data() + 64, &inf, 4);
  EXPECT_FALSE(Comparator(DType::F32).plain(b.data(), b.size()));
  EXPECT_TRUE(Comparator(DType::I32).plain(b.data(), b.size()));
  // Feeding such bytes as identical would lose the Inf counts: the plain check says no.
  Comparator host(DType::F32), device(DType::F32);
  host.feed(b.data(), b.data(), b.size(), 0);
  EXPECT_EQ(host.result().inf_expected, 1u);
}
