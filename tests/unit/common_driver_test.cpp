// The dlopen'ed driver on a machine without one: a clear message, not a crash.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include "common/driver.hpp"
#include "common/error.hpp"

namespace kerncap {
namespace {

bool driver_present() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != nullptr;
}

TEST(CommonDriver, MissingDriverIsExplained) {
  if (driver_present()) GTEST_SKIP() << "libcuda.so.1 loads here: the no-driver path cannot be tested";
  const std::string why = driver_load_error();
  EXPECT_FALSE(why.empty());
  EXPECT_NE(why.find("libcuda"), std::string::npos) << why;
  try {
    driver();
    FAIL() << "driver() returned without a driver";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Device);
    EXPECT_EQ(std::string(e.what()), why);
  }
}

TEST(CommonDriver, LoadsWhereTheDriverIs) {
  if (!driver_present()) GTEST_SKIP() << "no libcuda.so.1 on this machine";
  EXPECT_EQ(driver_load_error(), "");
  EXPECT_NE(driver().cuInit, nullptr);
}

}  // namespace
}  // namespace kerncap
