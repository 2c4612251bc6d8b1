#include <gtest/gtest.h>

#include "capture/matcher.hpp"

using namespace kerncap::capture;

TEST(CaptureMatcher, DemangleAndSubstring) {
  EXPECT_EQ(demangle("_Z9vectorAddPKfS0_Pfi"), "vectorAdd(float const*, float const*, float*, int)");
  EXPECT_EQ(demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");  // C names stay
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");                            // undemanglable stays
  Matcher m("transform_kernel<double", false);
  const std::string mangled = "_ZN7kc_demo6detail16transform_kernelIdLi2ENS_6SquareIdEEEEvPKT_PS4_mT1_";
  EXPECT_TRUE(m.matches(mangled, demangle(mangled)));
  EXPECT_FALSE(Matcher("transform_kernel<float", false).matches(mangled, demangle(mangled)));
  EXPECT_TRUE(Matcher("_ZN7kc_demo", false).matches(mangled, demangle(mangled)));  // mangled works too
}

TEST(CaptureMatcher, Regex) {
  Matcher m("^nvjet_.*_NNT$", true);
  EXPECT_TRUE(m.matches("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"));
  EXPECT_FALSE(m.matches("nvjet_sm90_hsh_NN", "nvjet_sm90_hsh_NN"));
  EXPECT_THROW(Matcher("(", true), std::regex_error);
}

TEST(CaptureMatcher, ClosestNamesPutsSubstringsAndNearMissesFirst) {
  std::vector<std::string> names = {"reduce_kernel<512>", "vectorAdd(float const*)", "gemm_tile<float>",
                                    "vector_scale(float*)"};
  auto c = closest_names("vectoradd", names, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], "vectorAdd(float const*)");  // case-insensitive substring
  auto d = closest_names("gem_tile", names, 1);
  EXPECT_EQ(d[0], "gemm_tile<float>");  // one edit away
  EXPECT_TRUE(closest_names("x", {}, 3).empty());
}
