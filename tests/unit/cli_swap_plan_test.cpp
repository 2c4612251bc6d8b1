// Resolving `kerncap run --swap` against real cubins (fixtures compiled from our own .cu at
// build time).
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/swap_plan.hpp"
#include "common/error.hpp"

namespace kerncap::cli {
namespace {

const std::string kCubin = std::string(KERNCAP_BINARY_DIR) + "/tests/fixtures/cubin/kernels_sm90.cubin";

#define NEED_FIXTURE()                                                            \
  if (!std::filesystem::exists(kCubin)) GTEST_SKIP() << "no fixture cubin (built with nvcc)";

TEST(SwapPlan, ANameMustPickOneKernelOfTheImage) {
  NEED_FIXTURE();
  const SwapPlan p = plan_swap("k_mixed=" + kCubin);
  EXPECT_EQ(p.spec.kernel, "k_mixed");
  EXPECT_EQ(p.spec.entry, "k_mixed");
  EXPECT_TRUE(std::filesystem::path(p.spec.image).is_absolute());
  EXPECT_FALSE(p.layout_checked);
  try {
    plan_swap("k_=" + kCubin);  // k_mixed, k_big, ...: several
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("match 'k_'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_swap("no_such_kernel=" + kCubin), Error);
  EXPECT_THROW(plan_swap("k_mixed=/no/such/file.cubin"), Error);
  EXPECT_THROW(split_swap_arg("k_mixed"), Error);
  EXPECT_EQ(split_swap_arg("a=b=c.cubin").second, "c.cubin") << "the image is after the last '='";
  EXPECT_THROW(plan_swaps({"k_mixed=" + kCubin, "k_mixed=" + kCubin}), Error);
}

}  // namespace
}  // namespace kerncap::cli
