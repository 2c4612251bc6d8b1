// pack_params: the parameter bytes of a launch, laid out as the kernel sees them.
#include <gtest/gtest.h>

#include <cstring>

#include "capture/launch_info.hpp"

namespace kerncap::capture {
namespace {

format::ParamSlot param_slot(uint32_t offset, uint32_t size) {
  format::ParamSlot s;
  s.offset = offset;
  s.size = size;
  return s;
}

TEST(CaptureParams, KernelParamsAreLaidOutBySlot) {
  uint64_t ptr = 0x7f0000001000;
  int n = 42;
  void* args[] = {&ptr, &n};
  LaunchArgs a;
  a.kernel_params = args;
  std::vector<uint8_t> out;
  std::string source, why;
  ASSERT_TRUE(pack_params(a, {param_slot(0, 8), param_slot(8, 4)}, &out, &source, &why)) << why;
  EXPECT_EQ(source, "kernelParams");
  ASSERT_EQ(out.size(), 12u);
  uint64_t p = 0;
  std::memcpy(&p, out.data(), 8);
  EXPECT_EQ(p, ptr);
}

TEST(CaptureParams, AnExtraBufferShorterThanTheDeclaredStructIsPaddedWithZeros) {
  // NCCL's kernels declare a 4 KiB by-value struct and pass only the bytes they filled.
  std::vector<uint8_t> filled(256, 0xab);
  size_t size = filled.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, filled.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  LaunchArgs a;
  a.extra = extra;
  std::vector<uint8_t> out;
  std::string source, why;
  ASSERT_TRUE(pack_params(a, {param_slot(0, 4096)}, &out, &source, &why)) << why;
  EXPECT_EQ(source, "extra");
  ASSERT_EQ(out.size(), 4096u);
  EXPECT_EQ(out[255], 0xab);
  EXPECT_EQ(out[256], 0);
  EXPECT_EQ(out[4095], 0);
}

TEST(CaptureParams, AnExtraSizeWithoutABufferIsRefused) {
  size_t size = 16;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  LaunchArgs a;
  a.extra = extra;
  std::vector<uint8_t> out;
  std::string source, why;
  EXPECT_FALSE(pack_params(a, {param_slot(0, 16)}, &out, &source, &why));
  EXPECT_NE(why.find("no buffer"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::capture
