#include <gtest/gtest.h>

#include "names/closest.hpp"
#include "names/demangle.hpp"
#include "names/match.hpp"

using namespace kerncap::names;

TEST(NamesMatch, SubstringOfDemangledOrMangled) {
  Matcher m("transform_kernel<double", false);
  const std::string mangled = "_ZN7kc_demo6detail16transform_kernelIdLi2ENS_6SquareIdEEEEvPKT_PS4_mT1_";
  EXPECT_TRUE(m.matches(mangled, demangle(mangled)));
  EXPECT_FALSE(Matcher("transform_kernel<float", false).matches(mangled, demangle(mangled)));
  EXPECT_TRUE(Matcher("_ZN7kc_demo", false).matches(mangled, demangle(mangled)));  // mangled works too
  // A plain pattern is text, not a regex: "." and "<" mean themselves.
  EXPECT_FALSE(Matcher("transform.kernel", false).matches(mangled, demangle(mangled)));
  EXPECT_EQ(m.pattern(), "transform_kernel<double");
}

TEST(NamesMatch, Regex) {
  Matcher m("^nvjet_.*_NNT$", true);
  EXPECT_TRUE(m.matches("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"));
  EXPECT_FALSE(m.matches("nvjet_sm90_hsh_NN", "nvjet_sm90_hsh_NN"));
  // Searched in either form: "^_Z6" only matches the mangled one, "^square(float*" only the demangled.
  const std::string mangled = "_Z6squarePfi";
  EXPECT_TRUE(Matcher("^_Z6", true).matches(mangled, demangle(mangled)));
  EXPECT_TRUE(Matcher(R"(^square\(float\*)", true).matches(mangled, demangle(mangled)));
  EXPECT_THROW(Matcher("(", true), std::regex_error);
}

TEST(NamesMatch, CopiesShareTheCompiledRegex) {
  Matcher a("gemm", true);
  Matcher b = a;
  EXPECT_TRUE(b.matches("x", "my_gemm"));
  EXPECT_FALSE(b.matches("x", "my_gem"));
}

TEST(NamesClosest, SubstringsAndNearMissesFirst) {
  std::vector<std::string> names = {"reduce_kernel<512>", "vectorAdd(float const*)", "gemm_tile<float>",
                                    "vector_scale(float*)"};
  auto c = closest_names("vectoradd", names, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], "vectorAdd(float const*)");  // case-insensitive substring
  auto d = closest_names("gem_tile", names, 1);
  EXPECT_EQ(d[0], "gemm_tile<float>");  // one edit away
  EXPECT_TRUE(closest_names("x", {}, 3).empty());
  EXPECT_EQ(closest_names("zzz", names, 10).size(), names.size());  // never more than given
}
