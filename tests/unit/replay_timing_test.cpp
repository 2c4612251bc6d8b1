// Timing statistics and option checks (the part of timing that needs no GPU).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "replay/timing.hpp"

namespace kerncap::replay {
namespace {

TEST(Timing, Statistics) {
  Stats s = statistics({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.stddev, 1.2909944, 1e-6);
  Stats one = statistics({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stddev, 0);
  EXPECT_DOUBLE_EQ(statistics({}).median, 0);
  EXPECT_DOUBLE_EQ(statistics({5, 1, 9}).median, 5);
}

TEST(Timing, OptionsAreChecked) {
  EXPECT_THROW(check({.warmup = 0, .iterations = 0}), Error);
  EXPECT_THROW(check({.warmup = -1, .iterations = 5}), Error);
  EXPECT_NO_THROW(check({.warmup = 0, .iterations = 1}));
}

TEST(Timing, JsonCarriesEveryStatistic) {
  Timing t;
  t.ms = {1, 2, 3};
  t.stats = statistics(t.ms);
  auto j = t.to_json();
  for (const char* k : {"method", "median_ms", "min_ms", "max_ms", "mean_ms", "stddev_ms", "times_ms", "iterations"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["median_ms"], 2.0);
}

}  // namespace
}  // namespace kerncap::replay
