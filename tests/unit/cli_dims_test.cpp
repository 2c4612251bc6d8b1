// --grid / --block parsing: the launch limits are checked before any GPU work.
#include <gtest/gtest.h>

#include "cli/replay_options.hpp"
#include "common/error.hpp"

namespace kerncap::cli {
namespace {

using Dims = std::array<uint32_t, 3>;

TEST(ParseDims, MissingDimensionsAreOne) {
  EXPECT_EQ(parse_dims("128", "--grid"), (Dims{128, 1, 1}));
  EXPECT_EQ(parse_dims("128,4", "--grid"), (Dims{128, 4, 1}));
  EXPECT_EQ(parse_dims("32,8,4", "--block"), (Dims{32, 8, 4}));
  EXPECT_EQ(parse_dims("2147483647", "--grid"), (Dims{2147483647u, 1, 1}));
}

void expect_usage_error(const std::string& text, const char* what, const std::string& fragment) {
  try {
    parse_dims(text, what);
    ADD_FAILURE() << text << " accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ParseDims, RefusesWhatCudaWouldRefuse) {
  expect_usage_error("0", "--grid", "at least 1");
  expect_usage_error("2147483648", "--grid", "above the CUDA limit");
  expect_usage_error("1,65536", "--grid", "above the CUDA limit 65535");
  expect_usage_error("1025", "--block", "above the CUDA limit 1024");
  expect_usage_error("32,32,2", "--block", "2048 threads");
  expect_usage_error("1,2,3,4", "--grid", "expected X[,Y[,Z]]");
  expect_usage_error("-1", "--grid", "expected X[,Y[,Z]]");
  expect_usage_error("1,,2", "--grid", "expected X[,Y[,Z]]");
  expect_usage_error("", "--grid", "expected X[,Y[,Z]]");
  expect_usage_error("99999999999999999999", "--grid", "expected X[,Y[,Z]]");
  expect_usage_error("4 ", "--block", "expected X[,Y[,Z]]");
}

}  // namespace
}  // namespace kerncap::cli
