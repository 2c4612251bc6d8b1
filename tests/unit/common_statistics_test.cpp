#include <gtest/gtest.h>

#include "common/statistics.hpp"

namespace kerncap {
namespace {

TEST(MedianCI, OrderStatisticsOfTheBinomial) {
  auto r = median_ci({5, 1, 4, 2, 3});
  EXPECT_EQ(r.median, 3);
  EXPECT_FALSE(r.exact95) << "5 samples cannot give a 95% interval";
  EXPECT_EQ(r.low, 1);
  EXPECT_EQ(r.high, 5);
  r = median_ci({6, 1, 5, 2, 4, 3});
  EXPECT_TRUE(r.exact95);
  EXPECT_EQ(r.median, 3.5);
  EXPECT_EQ(r.low, 1);
  EXPECT_EQ(r.high, 6);
  std::vector<double> v;
  for (int i = 1; i <= 20; ++i) v.push_back(i);
  r = median_ci(v);  // P(X <= 5) = 0.0207 for Binomial(20, 1/2): the 6th and 15th values
  EXPECT_TRUE(r.exact95);
  EXPECT_EQ(r.low, 6);
  EXPECT_EQ(r.high, 15);
  EXPECT_EQ(median_ci({}).n, 0u);
}

TEST(MedianCI, PairedRatios) {
  const auto r = paired_ratio({2, 4, 6}, {1, 2, 0});
  EXPECT_EQ(r.n, 2u) << "a pair with a zero denominator is left out";
  EXPECT_EQ(r.median, 2);
}

}  // namespace
}  // namespace kerncap
