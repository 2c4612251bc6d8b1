#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "capture/config.hpp"

using namespace kerncap::capture;

namespace {
void clear_env() {
  for (const auto& v : kerncap::format::env_vars()) unsetenv(std::string(v.name).c_str());
}
}  // namespace

TEST(CaptureConfig, InertWithoutMode) {
  clear_env();
  std::vector<std::string> problems;
  Config c = read_config(&problems);
  EXPECT_EQ(c.mode, Mode::Off);
  EXPECT_TRUE(problems.empty());
}

TEST(CaptureConfig, ReadsEveryVariable) {
  clear_env();
  setenv("KERNCAP_MODE", "capture", 1);
  setenv("KERNCAP_OUTPUT", "/tmp/x", 1);
  setenv("KERNCAP_KERNEL", "gemm", 1);
  setenv("KERNCAP_REGEX", "1", 1);
  setenv("KERNCAP_DISPATCH", "7", 1);
  setenv("KERNCAP_CONTINUE", "yes", 1);
  setenv("KERNCAP_CHUNK_BYTES", "65536", 1);
  std::vector<std::string> problems;
  Config c = read_config(&problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.mode, Mode::Capture);
  EXPECT_EQ(c.kernel, "gemm");
  EXPECT_TRUE(c.regex);
  EXPECT_EQ(c.dispatch, 7u);
  EXPECT_TRUE(c.keep_running);
  EXPECT_EQ(c.chunk_bytes, 65536u);
  EXPECT_EQ(c.to_json()["dispatch"], 7);
  clear_env();
}

TEST(CaptureConfig, BadValuesAreReportedAndDisableCapture) {
  clear_env();
  setenv("KERNCAP_MODE", "capture", 1);
  setenv("KERNCAP_OUTPUT", "/tmp/x", 1);
  setenv("KERNCAP_DISPATCH", "three", 1);
  setenv("KERNCAP_CHUNK_BYTES", "1000", 1);  // not a power of two
  std::vector<std::string> problems;
  Config c = read_config(&problems);
  EXPECT_EQ(c.mode, Mode::Off);  // no KERNCAP_KERNEL: never guess a target
  EXPECT_EQ(c.chunk_bytes, 4096u);
  EXPECT_GE(problems.size(), 3u);
  clear_env();
}
