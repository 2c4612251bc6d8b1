// Binding a captured module's globals to a recompiled variant's: the normaliser on names
// nvcc really produces, and the binder on one CUB translation unit compiled under two names.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "cubin_fixtures.hpp"
#include "replay/global_match.hpp"

namespace kerncap::replay {
namespace {

// Names as nvcc 13 writes them for main.cu and for the same file compiled as other_name.cu.
constexpr const char* kIgnoreMain =
    "_ZN37_INTERNAL_91da1e47_7_main_cu_2370eb714cuda3std3__439_GLOBAL__N__91da1e47_7_main_cu_2370eb716ignoreE";
constexpr const char* kIgnoreOther =
    "_ZN44_INTERNAL_1169bee7_13_other_name_cu_2370eb714cuda3std3__446_GLOBAL__N__1169bee7_13_other_name_cu_"
    "2370eb716ignoreE";
constexpr const char* kBeginMain = "_ZN37_INTERNAL_91da1e47_7_main_cu_2370eb714cuda3std3__45__cpo5beginE";
constexpr const char* kBeginOther =
    "_ZN44_INTERNAL_1169bee7_13_other_name_cu_2370eb714cuda3std3__45__cpo5beginE";

TEST(NormaliseInternalName, StripsTheTranslationUnitScopes) {
  EXPECT_EQ(normalise_internal_name(kIgnoreMain),
            "_ZN10_INTERNAL_4cuda3std3__412_GLOBAL__N__6ignoreE");
  EXPECT_EQ(normalise_internal_name(kIgnoreMain), normalise_internal_name(kIgnoreOther));
  EXPECT_EQ(normalise_internal_name(kBeginMain), normalise_internal_name(kBeginOther));
}

TEST(NormaliseInternalName, KeepsWhatTellsVariablesApart) {
  EXPECT_NE(normalise_internal_name(kBeginMain), normalise_internal_name(kIgnoreMain));
  EXPECT_NE(normalise_internal_name("_ZN37_INTERNAL_91da1e47_7_main_cu_2370eb714cuda3std3__45__cpo3endE"),
            normalise_internal_name(kBeginMain));
}

TEST(NormaliseInternalName, LeavesOtherNamesAlone) {
  for (const char* n : {"counter", "_Z9block_sumPKfPf", "_ZN2ns5tableE", "_ZN12_GLOBAL__N_11xE",
                        // contains the marker but its lengths do not add up: a user's name
                        "_ZN20my_INTERNAL_thing_cu3varE", "_ZN19_INTERNAL_abc_9_x_0fE"})
    EXPECT_EQ(normalise_internal_name(n), n) << n;
}

TEST(BindGlobals, ExactNamesFirstThenNormalised) {
  const std::vector<std::string> captured{"counter", kIgnoreMain, kBeginMain};
  const std::vector<std::string> variant{kBeginOther, "counter", kIgnoreOther, "extra"};
  const auto bound = bind_globals(captured, variant, "optimized.cubin");
  ASSERT_EQ(bound.size(), 3u);
  EXPECT_EQ(bound[0], "counter");
  EXPECT_EQ(bound[1], kIgnoreOther);
  EXPECT_EQ(bound[2], kBeginOther);
}

TEST(BindGlobals, AbsentIsNullopt) {
  const std::vector<std::string> captured{kIgnoreMain, "gone"};
  const std::vector<std::string> variant{"counter"};
  const auto bound = bind_globals(captured, variant, "v.cubin");
  EXPECT_FALSE(bound[0].has_value());
  EXPECT_FALSE(bound[1].has_value());
}

TEST(BindGlobals, AmbiguityNamesBothLists) {
  // Two translation units of one -rdc module, each with its own cuda::std::ignore.
  const std::string second =
      "_ZN37_INTERNAL_0badf00d_7_util_cu_2370eb714cuda3std3__439_GLOBAL__N__0badf00d_7_util_cu_2370eb716ignoreE";
  const std::vector<std::string> captured{kIgnoreMain, second};
  const std::vector<std::string> variant{kIgnoreOther};
  try {
    bind_globals(captured, variant, "optimized.cubin");
    FAIL() << "expected an ambiguity error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(kIgnoreMain), std::string::npos) << what;
    EXPECT_NE(what.find(second), std::string::npos) << what;
    EXPECT_NE(what.find(kIgnoreOther), std::string::npos) << what;
    EXPECT_NE(what.find("optimized.cubin"), std::string::npos) << what;
  }
}

std::vector<std::string> global_names(const std::string& fixture) {
  std::vector<std::string> names;
  for (const auto& g : cubin::parse_cubin(cubin::testing::fixture(fixture)).globals) names.push_back(g.name);
  return names;
}

// The real thing: one CUB translation unit compiled as main.cu and as kernel_variant.cu.
TEST(BindGlobals, CubTranslationUnitUnderTwoFileNames) {
  KC_NEED_FIXTURES();
  const auto captured = global_names("cub_main.cubin");
  const auto variant = global_names("cub_kernel_variant.cubin");
  ASSERT_EQ(captured.size(), variant.size());
  // The fixture is only a test of this if nvcc really renamed some of them.
  const auto renamed = std::count_if(captured.begin(), captured.end(), [&](const std::string& c) {
    return std::find(variant.begin(), variant.end(), c) == variant.end();
  });
  ASSERT_GT(renamed, 3) << "the CUB headers no longer produce translation-unit-prefixed globals";
  const auto bound = bind_globals(captured, variant, "cub_kernel_variant.cubin");
  std::vector<std::string> used;
  for (size_t i = 0; i < captured.size(); ++i) {
    ASSERT_TRUE(bound[i].has_value()) << captured[i];
    EXPECT_EQ(normalise_internal_name(captured[i]), normalise_internal_name(*bound[i]));
    used.push_back(*bound[i]);
  }
  std::sort(used.begin(), used.end());
  EXPECT_EQ(std::adjacent_find(used.begin(), used.end()), used.end()) << "two captured globals bound to one";
  for (const char* plain : {"blocks_done", "file_local_scale"})
    EXPECT_NE(std::find(captured.begin(), captured.end(), plain), captured.end()) << plain;
}

}  // namespace
}  // namespace kerncap::replay
