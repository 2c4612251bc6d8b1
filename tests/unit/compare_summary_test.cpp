// The one-line verdicts.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "compare/compare.hpp"

namespace kerncap::compare {
namespace {

template <typename T>
Result compare(DType t, std::vector<T> e, std::vector<T> a, Tolerance tol = {}) {
  Comparator c(t, tol);
  c.feed(reinterpret_cast<const uint8_t*>(e.data()), reinterpret_cast<const uint8_t*>(a.data()),
         e.size() * sizeof(T), 0);
  return c.result();
}

TEST(CompareSummary, ByteExact) {
  EXPECT_EQ(summary(compare<float>(DType::F32, {1, 2}, {1, 2})), "byte-exact");
  EXPECT_EQ(summary(Result{}), "byte-exact");
}

TEST(CompareSummary, WithinTolerance) {
  Result r = compare<float>(DType::F32, {2, 4}, {2.5f, 4}, {.atol = 1});
  EXPECT_EQ(summary(r), "identical within tolerance (1 bytes differ, max abs 0.5, max rel 0.25)");
}

TEST(CompareSummary, FloatMismatch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Result r = compare<float>(DType::F32, {1, 2, 2, nan}, {1, 2, 4, 1});
  EXPECT_EQ(summary(r),
            "2 of 4 fp32 elements differ, first at byte offset 8; max abs 2, max rel 1; NaN expected/actual 1/0");
}

TEST(CompareSummary, InfShownWhenPresent) {
  const double inf = std::numeric_limits<double>::infinity();
  Result r = compare<double>(DType::F64, {inf, 1}, {1, 1});
  EXPECT_EQ(summary(r),
            "1 of 2 fp64 elements differ, first at byte offset 0; max abs 0, max rel 0; NaN expected/actual 0/0; "
            "Inf expected/actual 1/0");
}

TEST(CompareSummary, IntegersHaveNoNaNPart) {
  Result r = compare<int16_t>(DType::I16, {1, 2, 3}, {1, 2, 5});
  EXPECT_EQ(summary(r), "1 of 3 i16 elements differ, first at byte offset 4; max abs 2, max rel 0.667");
}

TEST(CompareSummary, Bytes) {
  Result r = compare<uint8_t>(DType::Bytes, {0, 0, 0, 1, 2}, {0, 0, 0, 9, 9});
  EXPECT_EQ(summary(r), "2 of 5 bytes differ, first at byte offset 3");
}

TEST(CompareSummary, SmallErrorsReadable) {
  Result r = compare<double>(DType::F64, {1.0}, {1.000001}, {.atol = 1e-3});
  EXPECT_EQ(summary(r), "identical within tolerance (5 bytes differ, max abs 1e-06, max rel 1e-06)");
}

}  // namespace
}  // namespace kerncap::compare
