// Typed errors and their exit codes (src/common/error.hpp).
#include <gtest/gtest.h>

#include "common/error.hpp"

namespace kerncap {
namespace {

TEST(CommonError, HelpersThrowTheirKind) {
  try {
    input_error("bad manifest");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_STREQ(e.what(), "bad manifest");
  }
  try {
    usage_error("bad flag");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
  try {
    device_error("no gpu");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Device);
  }
}

TEST(CommonError, ExitCodes) {
  EXPECT_EQ(exit_code(ErrorKind::Usage), 2);
  EXPECT_EQ(exit_code(ErrorKind::Input), 2);
  EXPECT_EQ(exit_code(ErrorKind::Device), 3);
  EXPECT_EQ(exit_code(ErrorKind::Mismatch), 1);
  EXPECT_EQ(exit_code(ErrorKind::Internal), 70);
}

}  // namespace
}  // namespace kerncap
