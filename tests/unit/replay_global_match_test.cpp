// Binding a captured module's globals to a recompiled variant's: the normaliser on names
// nvcc really produces, and the binder on one CUB translation unit compiled under two names.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
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

TEST(NormaliseInternalName, CudaThirteenScopeTails) {
  // nvcc 13 ends a unit's scope with one of its symbols, and nvlink's static scope with a
  // hash and a counter (names taken from an H100 run of tests/gpu/editloop_e2e.sh).
  EXPECT_EQ(normalise_internal_name("_ZN41_INTERNAL_de5dc55c_11_cub_scan_cu_weights43_GLOBAL__N__de5dc55c_11_cub_"
                                    "scan_cu_weights10tiles_doneE"),
            "_ZN10_INTERNAL_12_GLOBAL__N__10tiles_doneE");
  EXPECT_EQ(normalise_internal_name("_ZN47_INTERNAL_0badf00d_17_kernel_variant_cu_weights49_GLOBAL__N__0badf00d_17_"
                                    "kernel_variant_cu_weights10tiles_doneE"),
            "_ZN10_INTERNAL_12_GLOBAL__N__10tiles_doneE");
  EXPECT_EQ(normalise_internal_name("__nv_static_37__246b2d9b_11_rdc_main_cu_0efc21a4_938_max_blocks"), "max_blocks");
}

TEST(NormaliseInternalName, InstanceUnitAgainstItsOriginalUnit) {
  // The same anonymous-namespace variable of a header, compiled by nvcc 13 in the unit that
  // instantiated the kernel (its tail: the unit's first function) and in the reproducer's
  // kernel_instance.cu, which defines no function (its tail: a hash and a counter).
  const std::string original =
      normalise_internal_name("_ZN35_INTERNAL_611e2341_7_many_cu__Z1rPi37_GLOBAL__N__611e2341_7_many_cu__Z1rPi10tiles_doneE");
  EXPECT_EQ(original, "_ZN10_INTERNAL_12_GLOBAL__N__10tiles_doneE");
  EXPECT_EQ(normalise_internal_name("_ZN55_INTERNAL_0c3733c1_18_kernel_instance_cu_66b53650_2630957_GLOBAL__N__"
                                    "0c3733c1_18_kernel_instance_cu_66b53650_2630910tiles_doneE"),
            original);
}

TEST(NormaliseInternalName, StripsNvlinksStaticScope) {
  // nvlink's scope for file-local variables of -rdc translation units, around the rest.
  EXPECT_EQ(normalise_internal_name("__nv_static_28__171dfdea_7_main_cu_2370eb71_file_local_scale"),
            normalise_internal_name("__nv_static_39__0c0ffee1_17_kernel_variant_cu_2370eb71_file_local_scale"));
  EXPECT_EQ(normalise_internal_name("__nv_static_28__171dfdea_7_main_cu_2370eb71_file_local_scale"),
            "file_local_scale");
  EXPECT_EQ(normalise_internal_name("__nv_static_28__171dfdea_7_main_cu_2370eb71__ZN37_INTERNAL_171dfdea_7_main_"
                                    "cu_2370eb7139_GLOBAL__N__171dfdea_7_main_cu_2370eb719anon_biasE"),
            "_ZN10_INTERNAL_12_GLOBAL__N__9anon_biasE");
  EXPECT_EQ(normalise_internal_name("__nv_static_3_abc_x"), "__nv_static_3_abc_x");  // not nvlink's shape
}

using G = ModuleGlobal;

std::vector<G> plain(std::initializer_list<std::string> names) {
  std::vector<G> v;
  for (const auto& n : names) v.push_back({n, 4, true});
  return v;
}

TEST(BindGlobals, ExactNamesFirstThenNormalised) {
  const auto captured = plain({"counter", kIgnoreMain, kBeginMain});
  const auto variant = plain({kBeginOther, "counter", kIgnoreOther, "extra"});
  const auto bound = bind_globals(captured, variant, "optimized.cubin");
  ASSERT_EQ(bound.size(), 3u);
  EXPECT_EQ(bound[0], "counter");
  EXPECT_EQ(bound[1], kIgnoreOther);
  EXPECT_EQ(bound[2], kBeginOther);
}

TEST(BindGlobals, AbsentAndUnusedIsNullopt) {
  const std::vector<G> captured{{kIgnoreMain, 1, false}, {"gone", 4, false}};
  const auto bound = bind_globals(captured, plain({"counter"}), "v.cubin");
  EXPECT_FALSE(bound[0].has_value());
  EXPECT_FALSE(bound[1].has_value());
}

// A variant that no longer has a variable cannot read it (a no-op kernel, a table computed
// instead of loaded): nothing to bind, nothing refused.
TEST(BindGlobals, AbsentButUsedIsNotBound) {
  const std::vector<G> captured{{"table", 128, true}};
  const auto bound = bind_globals(captured, plain({"counter"}), "optimized.cubin");
  ASSERT_EQ(bound.size(), 1u);
  EXPECT_FALSE(bound[0].has_value());
}

TEST(BindGlobals, SizeChangeIsRefused) {
  const std::vector<G> captured{{kIgnoreMain, 4, false}};
  const std::vector<G> variant{{kIgnoreOther, 8, false}};
  EXPECT_THROW(bind_globals(captured, variant, "optimized.cubin"), Error);
}

const std::string kIgnoreUtil =
    "_ZN37_INTERNAL_0badf00d_7_util_cu_2370eb714cuda3std3__439_GLOBAL__N__0badf00d_7_util_cu_2370eb716ignoreE";

TEST(BindGlobals, AmbiguityTheKernelDoesNotUseIsLeftAlone) {
  // Two translation units of one -rdc module, each with its own cuda::std::ignore.
  const std::vector<G> captured{{kIgnoreMain, 1, false}, {kIgnoreUtil, 1, false}};
  const std::vector<G> variant{{kIgnoreOther, 1, false}};
  const auto bound = bind_globals(captured, variant, "optimized.cubin");
  EXPECT_FALSE(bound[0].has_value());
  EXPECT_FALSE(bound[1].has_value());
}

TEST(BindGlobals, AmbiguityIsSettledByUseThenSize) {
  std::vector<G> captured{{kIgnoreMain, 1, true}, {kIgnoreUtil, 1, false}};
  // util.cu's copy in the variant: another content hash, the same normalised name.
  const std::string util_variant =
      "_ZN37_INTERNAL_1badf00d_7_util_cu_2370eb714cuda3std3__439_GLOBAL__N__1badf00d_7_util_cu_2370eb716ignoreE";
  std::vector<G> variant{{kIgnoreOther, 1, true}, {util_variant, 1, false}};
  auto bound = bind_globals(captured, variant, "optimized.cubin");
  EXPECT_EQ(bound[0], kIgnoreOther);
  EXPECT_FALSE(bound[1].has_value());
  // Both used, told apart by size.
  captured = {{kIgnoreMain, 4, true}, {kIgnoreUtil, 8, true}};
  variant[0].size = 8;
  variant[1].size = 4;
  bound = bind_globals(captured, variant, "optimized.cubin");
  EXPECT_EQ(bound[0], variant[1].name);
  EXPECT_EQ(bound[1], variant[0].name);
}

TEST(BindGlobals, AmbiguityNamesBothLists) {
  const std::vector<G> captured{{kIgnoreMain, 1, true}, {kIgnoreUtil, 1, true}};
  const std::vector<G> variant{{kIgnoreOther, 1, true}};
  try {
    bind_globals(captured, variant, "optimized.cubin");
    FAIL() << "expected an ambiguity error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(kIgnoreMain), std::string::npos) << what;
    EXPECT_NE(what.find(kIgnoreUtil), std::string::npos) << what;
    EXPECT_NE(what.find(kIgnoreOther), std::string::npos) << what;
    EXPECT_NE(what.find("optimized.cubin"), std::string::npos) << what;
  }
}

// A fixture's globals, marked with what its kernel uses (as the replay session does).
std::vector<G> globals_of(const std::string& fixture, const std::string& kernel) {
  const auto bytes = cubin::testing::fixture(fixture);
  const auto used = cubin::globals_used(bytes, kernel, 90);
  EXPECT_TRUE(used.has_value()) << fixture;
  std::vector<G> out;
  for (const auto& g : cubin::parse_cubin(bytes).globals)
    out.push_back({g.name, g.size, !used || std::find(used->begin(), used->end(), g.name) != used->end()});
  return out;
}

constexpr const char* kBlockSum = "_Z9block_sumPKfPf";

// The real thing: one CUB translation unit compiled as main.cu and as kernel_variant.cu.
TEST(BindGlobals, CubTranslationUnitUnderTwoFileNames) {
  KC_NEED_FIXTURES();
  const auto captured = globals_of("cub_main.cubin", kBlockSum);
  const auto variant = globals_of("cub_kernel_variant.cubin", kBlockSum);
  ASSERT_EQ(captured.size(), variant.size());
  // The fixture is only a test of this if nvcc really renamed some of them.
  const auto renamed = std::count_if(captured.begin(), captured.end(), [&](const G& c) {
    return std::none_of(variant.begin(), variant.end(), [&](const G& v) { return v.name == c.name; });
  });
  ASSERT_GT(renamed, 3) << "the CUB headers no longer produce translation-unit-prefixed globals";
  const auto bound = bind_globals(captured, variant, "cub_kernel_variant.cubin");
  std::vector<std::string> targets;
  for (size_t i = 0; i < captured.size(); ++i) {
    ASSERT_TRUE(bound[i].has_value()) << captured[i].name;
    EXPECT_EQ(normalise_internal_name(captured[i].name), normalise_internal_name(*bound[i]));
    targets.push_back(*bound[i]);
  }
  std::sort(targets.begin(), targets.end());
  EXPECT_EQ(std::adjacent_find(targets.begin(), targets.end()), targets.end()) << "two captured globals bound to one";
  for (const char* name : {"blocks_done", "file_local_scale", "never_used"})
    EXPECT_TRUE(std::any_of(captured.begin(), captured.end(), [&](const G& c) { return c.name == name; })) << name;
}

// A reproducer's kernel_instance.cu (the captured instantiation of a header template alone)
// against the unit that instantiated it three times: every global the kernel uses binds,
// under another file's scope; the unit's own global, which the kernel does not use, is left.
TEST(BindGlobals, InstanceUnitAgainstTheUnitItCameFrom) {
  KC_NEED_FIXTURES();
  constexpr const char* kTmplSum = "_Z8tmpl_sumIfLi256EEvPKT_PS0_";
  const auto captured = globals_of("cub_tmpl_unit.cubin", kTmplSum);
  const auto variant = globals_of("cub_tmpl_instance.cubin", kTmplSum);
  const auto bound = bind_globals(captured, variant, "cub_tmpl_instance.cubin");
  size_t used = 0, renamed = 0;
  for (size_t i = 0; i < captured.size(); ++i) {
    if (captured[i].name == "unit_only") {
      EXPECT_FALSE(bound[i].has_value());
    }
    if (!captured[i].used) continue;
    ++used;
    ASSERT_TRUE(bound[i].has_value()) << captured[i].name;
    EXPECT_EQ(normalise_internal_name(captured[i].name), normalise_internal_name(*bound[i]));
    if (*bound[i] != captured[i].name) ++renamed;
  }
  EXPECT_GE(used, 2u);     // tmpl_scale and the anonymous-namespace counter at least
  EXPECT_GE(renamed, 1u);  // the counter: cub_tmpl_unit_cu's scope, then kernel_instance_cu's
}

TEST(BindGlobals, CubEditsThatChangeASizeAreRefusedADropIsNot) {
  KC_NEED_FIXTURES();
  const auto captured = globals_of("cub_main.cubin", kBlockSum);
  // anon_bias became float[2]: a size change of a variable the kernel uses.
  EXPECT_THROW(bind_globals(captured, globals_of("cub_edit_size.cubin", kBlockSum), "v.cubin"), Error);
  // file_local_scale is gone: the variant cannot read it, so it is not bound (and not refused).
  const auto dropped = bind_globals(captured, globals_of("cub_edit_drop.cubin", kBlockSum), "v.cubin");
  size_t seen = 0;
  for (size_t k = 0; k < captured.size(); ++k) {
    if (captured[k].name.find("file_local_scale") == std::string::npos) continue;
    ++seen;
    EXPECT_FALSE(dropped[k].has_value());
  }
  EXPECT_EQ(seen, 1u);
}

// Two CUB translation units linked into one -rdc module: each has its own copy of every
// CUB tag object, under nvlink's static scope; only what the kernel uses must be told apart.
TEST(BindGlobals, CubRdcModuleOfTwoTranslationUnits) {
  KC_NEED_FIXTURES();
  const std::string dir = cubin::testing::kFixtureDir;
  if (!std::ifstream(dir + "/cub_linked_main.cubin")) GTEST_SKIP() << "no nvlink at build time";
  const auto captured = globals_of("cub_linked_main.cubin", kBlockSum);
  const auto variant = globals_of("cub_linked_kernel_variant.cubin", kBlockSum);
  const auto used = std::count_if(captured.begin(), captured.end(), [](const G& g) { return g.used; });
  EXPECT_EQ(used, 3);
  const auto bound = bind_globals(captured, variant, "cub_linked_kernel_variant.cubin");
  for (size_t i = 0; i < captured.size(); ++i)
    if (captured[i].used) {
      ASSERT_TRUE(bound[i].has_value()) << captured[i].name;
      EXPECT_EQ(normalise_internal_name(captured[i].name), normalise_internal_name(*bound[i]));
    }
}

// The captured module linked -rdc from two units, the variant the kernel's unit compiled
// whole-program (as the reproducer recompiles it): nvlink's scope is gone from every name.
TEST(BindGlobals, CubRdcModuleAgainstAWholeProgramVariant) {
  KC_NEED_FIXTURES();
  const std::string dir = cubin::testing::kFixtureDir;
  if (!std::ifstream(dir + "/cub_linked_main.cubin")) GTEST_SKIP() << "no nvlink at build time";
  const auto captured = globals_of("cub_linked_main.cubin", kBlockSum);
  const auto variant = globals_of("cub_kernel_variant.cubin", kBlockSum);
  const auto bound = bind_globals(captured, variant, "optimized.cubin");
  size_t used = 0;
  for (size_t i = 0; i < captured.size(); ++i) {
    if (!captured[i].used) continue;
    ++used;
    ASSERT_TRUE(bound[i].has_value()) << captured[i].name;
    EXPECT_EQ(normalise_internal_name(captured[i].name), normalise_internal_name(*bound[i]));
  }
  EXPECT_EQ(used, 3u);
}

}  // namespace
}  // namespace kerncap::replay
