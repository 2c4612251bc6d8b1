// The message for a launch block the loaded image's kernel cannot take (Session refuses it
// before the driver answers CUDA_ERROR_INVALID_VALUE).
#include <gtest/gtest.h>

#include "cubin_fixtures.hpp"
#include "replay/variant_image.hpp"

namespace kerncap::replay {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ReplayBlockFit, TheCapturedImageSaysTheCaptureHoldsAnotherCompilation) {
  const std::string m = block_too_large_message("the captured image", "triton_poi_fused_0", 256, 128, false, false);
  EXPECT_TRUE(has(m, "at most 128 threads")) << m;
  EXPECT_TRUE(has(m, "launched it with 256")) << m;
  EXPECT_TRUE(has(m, "another compilation of this kernel")) << m;
}

TEST(ReplayBlockFit, AVariantIsToldWhatItMustAdmit) {
  const std::string m = block_too_large_message("v.cubin", "k", 256, 128, true, false);
  EXPECT_TRUE(has(m, "v.cubin admits at most 128")) << m;
  EXPECT_TRUE(has(m, "num_warps 8")) << m;
  EXPECT_TRUE(has(m, "__launch_bounds__ of at least 256")) << m;
}

TEST(ReplayBlockFit, AGivenBlockIsNamedAsTheCause) {
  const std::string m = block_too_large_message("v.cubin", "k", 2048, 1024, true, true);
  EXPECT_TRUE(has(m, "--block asks for 2048")) << m;
  EXPECT_FALSE(has(m, "num_warps")) << m;
}

TEST(ReplayBlockFit, LaunchBoundsAreReadFromTheImage) {
  KC_NEED_FIXTURES();
  EXPECT_EQ(launch_bound(cubin::testing::fixture("bounds128_sm90.cubin"), 90, "kc_scale"), 128);
  EXPECT_EQ(launch_bound(cubin::testing::fixture("bounds256_sm90.cubin"), 90, "kc_scale"), 256);
  EXPECT_EQ(launch_bound(cubin::testing::fixture("bounds256_sm90.cubin"), 90, "no_such_kernel"), 0);
  const std::vector<uint8_t> junk(64, 0x5a);
  EXPECT_EQ(launch_bound(junk, 90, "kc_scale"), 0);  // unreadable: left to the driver
}

}  // namespace
}  // namespace kerncap::replay
