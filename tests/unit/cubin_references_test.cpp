// globals_used: the module globals a kernel's code reaches, from constant-bank operands of
// its instructions, relocations and initialisers (fixture refs.cu, compiled whole-program,
// -rdc and as a fatbin).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cubin/cubin.hpp"
#include "cubin_fixtures.hpp"

namespace kerncap::cubin {
namespace {

using testing::fixture;
using Names = std::vector<std::string>;

Names used(const std::string& file, const std::string& kernel) {
  const auto r = globals_used(fixture(file), kernel, file.find("sm100") != std::string::npos ? 100 : 90);
  EXPECT_TRUE(r.has_value()) << file << " " << kernel;
  return r.value_or(Names{"<unknown>"});
}

void check_refs(const std::string& file) {
  // A direct constant offset, a device function's global, an atomic. The constant table
  // read through an index counts every __constant__ variable: where an index leads is
  // not known, and a use too many only makes the variant check stricter.
  EXPECT_EQ(used(file, "_Z8k_directPfi"), (Names{"coeffs", "counter", "lut", "other_constant", "table"})) << file;
  // The pointer's initialiser holds &pointee.
  EXPECT_EQ(used(file, "_Z9k_pointerPi"), (Names{"indirect", "pointee"})) << file;
  EXPECT_EQ(used(file, "_Z6k_nonePf"), Names{}) << file;
  EXPECT_EQ(used(file, "_Z7k_otherPi"), (Names{"only_k_other", "other_constant"})) << file;
}

TEST(GlobalsUsed, WholeProgramCubin) {
  KC_NEED_FIXTURES();
  check_refs("refs_sm90.cubin");
}

TEST(GlobalsUsed, Sm100Cubin) {
  KC_NEED_FIXTURES();
  check_refs("refs_sm100.cubin");
}

TEST(GlobalsUsed, LinkedRdcCubin) {
  KC_NEED_FIXTURES();
  if (!std::ifstream(std::string(testing::kFixtureDir) + "/refs_linked_sm90.cubin")) GTEST_SKIP() << "no nvlink";
  check_refs("refs_linked_sm90.cubin");
}

TEST(GlobalsUsed, FatbinPicksTheCubin) {
  KC_NEED_FIXTURES();
  check_refs("refs.fatbin");
}

TEST(GlobalsUsed, UnknownWhenTheImageCannotTell) {
  KC_NEED_FIXTURES();
  EXPECT_FALSE(globals_used(fixture("kernels.ptx"), "k_mixed", 90).has_value());
  EXPECT_FALSE(globals_used(fixture("refs_sm90.cubin"), "_Z9no_kernelv", 90).has_value());
}

TEST(GlobalsUsed, CubKernelUsesItsOwnVariablesOnly) {
  KC_NEED_FIXTURES();
  // CUB's internal-linkage tag objects (cuda::std::ignore, the CPOs) are in the module but
  // no code reads them; never_used neither.
  const Names names = used("cub_main.cubin", "_Z9block_sumPKfPf");
  ASSERT_EQ(names.size(), 3u);
  EXPECT_TRUE(names[0].starts_with("_ZN37_INTERNAL_")) << names[0];  // the anonymous-namespace bias
  EXPECT_NE(names[0].find("anon_bias"), std::string::npos) << names[0];
  EXPECT_EQ(names[1], "blocks_done");
  EXPECT_EQ(names[2], "file_local_scale");
}

}  // namespace
}  // namespace kerncap::cubin
