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

namespace kerncap::cli {
namespace {

namespace fs = std::filesystem;

// A Triton OUT with a stand-in interpreter (KERNCAP_PYTHON) that "compiles" kernel_variant.py:
// it writes candidate.json with the geometry in $FAKE_BLOCK and exits with $FAKE_EXIT.
struct TritonOut {
  fs::path out = fs::temp_directory_path() / ("kerncap-swapplan-" + std::to_string(::getpid()));
  TritonOut() {
    fs::remove_all(out);
    fs::create_directories(out);
    std::ofstream(out / "reproducer.py") << "# the reproducer\n";
    std::ofstream(out / "kernel_variant.py") << "# the kernel\n";
    const fs::path py = out / "fake-python";
    std::ofstream(py) << "#!/bin/sh\n"
                         "d=$(dirname \"$1\")\n"
                         "[ \"${FAKE_EXIT:-0}\" = 2 ] && { echo 'SyntaxError in kernel_variant.py' >&2; exit 2; }\n"
                         "printf '{\"kernel\": \"k\", \"grid\": [96, 1, 1], \"block\": [%s, 1, 1], "
                         "\"shared_mem_bytes\": 0, \"cluster\": [0, 0, 0], \"sha256\": \"x\"}' \"${FAKE_BLOCK:-128}\" "
                         "> \"$d/candidate.json\"\n"
                         "echo cubin > \"$d/candidate.cubin\"\n"
                         "echo 'kernel_variant.py compiled'\n"
                         "echo 'Result: PASS (byte-exact)'\n"
                         "echo '  candidate.cubin written'\n"
                         "exit \"${FAKE_EXIT:-0}\"\n";
    fs::permissions(py, fs::perms::owner_all);
    ::setenv("KERNCAP_PYTHON", py.c_str(), 1);
  }
  ~TritonOut() {
    ::unsetenv("KERNCAP_PYTHON");
    ::unsetenv("FAKE_BLOCK");
    ::unsetenv("FAKE_EXIT");
    fs::remove_all(out);
  }
  std::string compile(std::string* verdict) {
    return compile_triton_variant(out, out / "kernel_variant.py", {96, 1, 1}, {128, 1, 1}, 0, {0, 0, 0}, verdict);
  }
};

TEST(SwapPlanTriton, TheReproducerCompilesTheEditedKernelWhenItKeepsTheGeometry) {
  TritonOut t;
  std::string verdict;
  EXPECT_EQ(t.compile(&verdict), (t.out / "candidate.cubin").string());
  EXPECT_EQ(verdict, "Result: PASS (byte-exact)");
  ::setenv("FAKE_BLOCK", "256", 1);  // num_warps 8 instead of 4
  try {
    t.compile(&verdict);
    FAIL() << "a changed block must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block 128x1x1 -> 256x1x1"), std::string::npos) << e.what();
  }
  ::setenv("FAKE_BLOCK", "128", 1);
  ::setenv("FAKE_EXIT", "2", 1);
  try {
    t.compile(&verdict);
    FAIL() << "a variant that does not compile must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SyntaxError"), std::string::npos) << e.what();
  }
  EXPECT_THROW(compile_triton_variant(t.out, t.out / "other.py", {96, 1, 1}, {128, 1, 1}, 0, {0, 0, 0}, &verdict),
               Error);
}

}  // namespace
}  // namespace kerncap::cli
