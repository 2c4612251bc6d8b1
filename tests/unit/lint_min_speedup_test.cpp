// `kerncap lint` reads OUT/kerncap.toml whole, [timing] too: a min_speedup out of range
// (0, negative, NaN, infinite, not a number) was accepted (issue 38's fuzz run). Each is
// refused with exit 2 and the key's line, before any check runs.
#include <gtest/gtest.h>

#include <fstream>

#include "lint_fixtures.hpp"

namespace kerncap::lint {
namespace {

namespace fs = std::filesystem;

const std::string kKerncap = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";

class LintMinSpeedup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cubin::testing::kFixtureDir) GTEST_SKIP() << "no nvcc at build time: cubin fixtures were not compiled";
    if (!fs::exists(kKerncap)) GTEST_SKIP() << kKerncap << " is not built";
    testing::make_capture(out_.path(), cubin::testing::fixture("lint_sm90.cubin"), "k_spill", 1024);
  }
  ToolRun lint_with(const std::string& value) {
    std::ofstream(out_.path() / "kerncap.toml", std::ios::trunc) << "[timing]\nmin_speedup = " << value << "\n";
    const auto r = run_tool({kKerncap, "lint", out_.path().string(), "--no-sass"});
    EXPECT_TRUE(r) << "cannot run " << kKerncap;
    return r ? *r : ToolRun{};
  }
  testing::TempDir out_;
};

TEST_F(LintMinSpeedup, AFiniteNumberAboveZeroIsAccepted) {
  for (const char* ok : {"1.0", "2", "0.5", "1e3"}) {
    const ToolRun r = lint_with(ok);
    EXPECT_EQ(r.status, 0) << ok << ": " << r.out << r.err;
  }
}

TEST_F(LintMinSpeedup, OutOfRangeOrNotANumberIsRefused) {
  for (const char* bad : {"0", "-1", "-0.0", "nan", "+nan", "inf", "-inf", "\"fast\"", "[1.2]", "true", "{ x = 1 }"}) {
    SCOPED_TRACE(bad);
    const ToolRun r = lint_with(bad);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("kerncap.toml:2: [timing] min_speedup: expected"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace kerncap::lint
