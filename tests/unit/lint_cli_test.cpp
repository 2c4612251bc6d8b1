// The `kerncap lint` command end to end on a capture built around a fixture cubin: the
// report's lines, kerncap.toml limits, flags over the file, --init, --json and exit codes.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "lint_fixtures.hpp"

namespace kerncap::lint {
namespace {

namespace fs = std::filesystem;

const std::string kKerncap = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";

ToolRun kerncap(std::vector<std::string> args) {
  args.insert(args.begin(), {kKerncap, "lint"});
  const auto r = run_tool(args);
  EXPECT_TRUE(r) << "cannot run " << kKerncap;
  return r ? *r : ToolRun{};
}

class LintCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cubin::testing::kFixtureDir) GTEST_SKIP() << "no nvcc at build time: cubin fixtures were not compiled";
    if (!fs::exists(kKerncap)) GTEST_SKIP() << kKerncap << " is not built";
    testing::make_capture(out_.path(), cubin::testing::fixture("lint_sm90.cubin"), "k_spill", 1024);
  }
  std::string out() const { return out_.path().string(); }
  testing::TempDir out_;
};

TEST_F(LintCli, PassesWithoutLimits) {
  const ToolRun r = kerncap({out(), "--no-sass"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  info  registers        32 per thread\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  info  local memory     1128 B stack per thread\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nResult: PASS\n"), std::string::npos) << r.out;
}

TEST_F(LintCli, KerncapTomlLimitsAndFlagOverride) {
  std::ofstream(out_.path() / "kerncap.toml") << "[artifact_checks]\nmax_registers = 16\n";
  ToolRun r = kerncap({out(), "--no-sass"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("  FAIL  registers        32 per thread (limit 16)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nResult: FAIL\n"), std::string::npos) << r.out;
  r = kerncap({out(), "--no-sass", "--max-registers", "40"});  // the flag wins
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = kerncap({out(), "--no-sass", "--json"});
  EXPECT_EQ(r.status, 1);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["result"], "FAIL");
  EXPECT_EQ(j["resources"]["registers"], 32);
  EXPECT_EQ(j["occupancy"]["blocks_per_sm"], 2);
}

TEST_F(LintCli, BadInputExitsTwo) {
  std::ofstream(out_.path() / "kerncap.toml") << "[artifact_checks]\nmax_registers = \"many\"\n";
  ToolRun r = kerncap({out(), "--no-sass"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("kerncap.toml:2: [artifact_checks] max_registers: expected an integer"), std::string::npos)
      << r.err;
  fs::remove(out_.path() / "kerncap.toml");
  r = kerncap({out(), "--no-sass", "--require", "LDG("});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--require \"LDG(\""), std::string::npos) << r.err;
  r = kerncap({(out_.path() / "nothing").string()});
  EXPECT_EQ(r.status, 2);
}

TEST_F(LintCli, InitWritesTheDefaultFileOnce) {
  ToolRun r = kerncap({out(), "--init"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 6), "wrote ");
  ASSERT_TRUE(fs::exists(out_.path() / "kerncap.toml"));
  r = kerncap({out(), "--init"});
  EXPECT_EQ(r.out.substr(0, 17), "kept the existing");
  r = kerncap({out(), "--no-sass"});  // the default file passes a kernel within hardware limits
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("32 per thread (limit 255)"), std::string::npos) << r.out;
}

TEST_F(LintCli, SassChecks) {
  KC_NEED_NVDISASM(tool);
  const ToolRun r = kerncap({out(), "--disassembler", tool, "--max-spills", "0", "--forbid", "\\bSTL\\b"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("  FAIL  spills "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  FAIL  forbidden /\\bSTL\\b/ found in SASS: STL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  info  instruction mix "), std::string::npos) << r.out;
}

// validate reads the same file: a malformed one is refused with its line before any GPU
// work, and so is a bad invariant name (exit 2, no GPU needed).
TEST_F(LintCli, ValidateRefusesAMalformedKerncapToml) {
  std::ofstream(out_.path() / "kerncap.toml") << "[invariants]\nno_nan = 1\n";
  auto r = run_tool({kKerncap, "validate", out(), "--footprint", "never"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 2) << r->out << r->err;
  EXPECT_NE(r->err.find("kerncap.toml:2: [invariants] no_nan: expected true or false"), std::string::npos) << r->err;
  std::ofstream(out_.path() / "kerncap.toml", std::ios::trunc) << "[invariants]\nno_nan = true\n";
  r = run_tool({kKerncap, "validate", out(), "--footprint", "never", "--invariant", "no_nan,positive"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 2) << r->out << r->err;
  EXPECT_NE(r->err.find("unknown invariant"), std::string::npos) << r->err;
}

}  // namespace
}  // namespace kerncap::lint

