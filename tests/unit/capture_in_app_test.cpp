// The in-app time kept from kernel records (no GPU, no CUPTI).
#include <gtest/gtest.h>

#include <string>

#include "capture/in_app.hpp"

namespace kerncap::capture {
namespace {

TEST(CaptureInApp, MedianOfTheSameKernelAndGrid) {
  InAppTimes t;
  const std::string a = "_Z1av", b = "_Z1bv";
  const char* a_copy = "_Z1av";  // another address, same text: the same kernel
  t.add(a.c_str(), {64, 1, 1}, 4000);
  t.add(a.c_str(), {64, 1, 1}, 6000);
  t.add(a_copy, {64, 1, 1}, 5000);
  t.add(a.c_str(), {128, 1, 1}, 90000);  // another grid
  t.add(b.c_str(), {64, 1, 1}, 70000);   // another kernel
  EXPECT_DOUBLE_EQ(*t.median_ns("_Z1av", {64, 1, 1}), 5000);
  EXPECT_DOUBLE_EQ(*t.median_ns("_Z1av", {128, 1, 1}), 90000);
  t.add(a.c_str(), {64, 1, 1}, 7000);
  EXPECT_DOUBLE_EQ(*t.median_ns("_Z1av", {64, 1, 1}), 5500);  // even count: mean of the middle two
  EXPECT_FALSE(t.median_ns("_Z1cv", {64, 1, 1}));
  EXPECT_FALSE(t.median_ns("_Z1bv", {1, 1, 1}));
  t.add(nullptr, {1, 1, 1}, 1);  // ignored
}

TEST(CaptureInApp, KeepsTheLatestLaunches) {
  InAppTimes t;
  const char* k = "_Z1kv";
  for (size_t i = 0; i < InAppTimes::kKeep; ++i) t.add(k, {1, 1, 1}, 1'000'000);  // old and slow
  for (size_t i = 0; i < InAppTimes::kKeep; ++i) t.add(k, {1, 1, 1}, 10);
  EXPECT_DOUBLE_EQ(*t.median_ns(k, {1, 1, 1}), 10);
}

}  // namespace
}  // namespace kerncap::capture
