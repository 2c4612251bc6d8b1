// `kerncap lint` over small capture directories built around the fixture code objects
// (tests/fixtures/cubin/lint.cu): resources known by construction, the occupancy of the
// captured launch, limits and patterns, fatbin and PTX images.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "lint/lint.hpp"
#include "lint_fixtures.hpp"

namespace kerncap::lint {
namespace {

using cubin::testing::fixture;

const Check* find_check(const LintReport& r, const std::string& name) {
  for (const Check& c : r.checks)
    if (c.name == name) return &c;
  return nullptr;
}

LintOptions no_sass() {
  LintOptions o;
  o.sass = false;
  return o;
}

TEST(LintCheck, SpillingKernelResourcesAndOccupancy) {
  KC_NEED_FIXTURES();
  testing::TempDir out;
  const auto cap = testing::make_capture(out.path(), fixture("lint_sm90.cubin"), "k_spill", 1024);
  const LintReport r = lint(cap, no_sass());
  ASSERT_TRUE(r.resources);
  EXPECT_EQ(r.code_sm, 90);
  EXPECT_EQ(r.resources->registers, 32);      // __launch_bounds__(1024, 2): 64K / 2048 threads
  EXPECT_EQ(r.resources->local_bytes, 1128);  // ptxas -v: 1128 bytes stack frame
  EXPECT_EQ(r.resources->shared_static_bytes, 0);
  // 1024 threads = 32 warps: 2 blocks by warps and 2 by registers (1024 per warp).
  ASSERT_TRUE(r.occupancy);
  EXPECT_EQ(r.occupancy->blocks_per_sm, 2);
  EXPECT_EQ(r.occupancy->limit_registers, 2);
  EXPECT_DOUBLE_EQ(r.occupancy->occupancy, 1.0);
  ASSERT_NE(find_check(r, "registers"), nullptr);
  EXPECT_EQ(find_check(r, "registers")->status, Status::Info);  // no limit set
  EXPECT_EQ(find_check(r, "registers")->detail, "32 per thread");
  EXPECT_TRUE(r.passed());
  const std::string text = to_text(r);
  EXPECT_NE(text.find("occupancy        2 blocks of 1024 threads per SM, 64/64 warps (100%), limited by warps"),
            std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 13), "Result: PASS\n");
}

TEST(LintCheck, LimitsFail) {
  KC_NEED_FIXTURES();
  testing::TempDir out;
  const auto cap = testing::make_capture(out.path(), fixture("lint_sm90.cubin"), "k_spill", 1024);
  LintOptions o = no_sass();
  o.checks.max_registers = 24;
  o.checks.max_local_memory = 2048;
  const LintReport r = lint(cap, o);
  EXPECT_EQ(find_check(r, "registers")->status, Status::Fail);
  EXPECT_EQ(find_check(r, "registers")->detail, "32 per thread (limit 24)");
  EXPECT_EQ(find_check(r, "local memory")->status, Status::Pass);
  EXPECT_FALSE(r.passed());
  const std::string text = to_text(r);
  EXPECT_NE(text.find("  FAIL  registers        32 per thread (limit 24)\n"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 13), "Result: FAIL\n");
  EXPECT_EQ(to_json(r)["result"], "FAIL");
  EXPECT_EQ(to_json(r)["line"], "Result: FAIL");  // the text's verdict line, for the Python API and MCP
}

TEST(LintCheck, SharedMemoryLimitsOccupancy) {
  KC_NEED_FIXTURES();
  testing::TempDir out;
  // 4 KiB static + 32 KiB dynamic + 1 KiB reserved = 37888 B: 233472 / 37888 = 6 blocks of 8 warps.
  const auto cap = testing::make_capture(out.path(), fixture("lint_sm90.cubin"), "k_smem", 256, 32 * 1024);
  const LintReport r = lint(cap, no_sass());
  EXPECT_EQ(r.resources->shared_static_bytes, 4096);
  EXPECT_EQ(r.occupancy->shared_per_block, 37888u);
  EXPECT_EQ(r.occupancy->blocks_per_sm, 6);
  EXPECT_EQ(r.occupancy->limited_by, "shared memory");
  EXPECT_EQ(find_check(r, "shared memory")->detail,
            "4096 B static + 32768 B dynamic per block (+1024 B reserved by the system)");
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["occupancy"]["blocks_per_sm"], 6);
  EXPECT_EQ(j["resources"]["shared_static_bytes"], 4096);
  EXPECT_EQ(j["result"], "PASS");
}

TEST(LintCheck, LaunchThatCannotRunFails) {
  KC_NEED_FIXTURES();
  testing::TempDir out;
  const auto cap = testing::make_capture(out.path(), fixture("lint_sm90.cubin"), "k_smem", 256, 225 * 1024);
  const LintReport r = lint(cap, no_sass());
  EXPECT_EQ(find_check(r, "occupancy")->status, Status::Fail);
  EXPECT_FALSE(r.passed());
}

TEST(LintCheck, FatbinUsesTheCubinForTheCaptureSm) {
  KC_NEED_FIXTURES();
  testing::TempDir a, b;
  const std::vector<uint8_t> fat = fixture("multi.fatbin");
  LintReport r = lint(testing::make_capture(a.path(), fat, "k_mixed", 256, 0, 90), no_sass());
  EXPECT_EQ(r.image_kind, "fatbin");
  EXPECT_EQ(r.code_sm, 90);
  EXPECT_EQ(r.resources->shared_static_bytes, 1024);  // float tile[256]
  EXPECT_EQ(r.resources->registers, cubin::parse_cubin(fixture("kernels_sm90.cubin")).find_kernel("k_mixed")->registers);
  r = lint(testing::make_capture(b.path(), fat, "k_mixed", 256, 0, 86), no_sass());
  EXPECT_EQ(r.code_sm, 80);  // the driver's choice on sm_86: same major, lower minor

  const CodeObjects c = select_code(fat, 90);
  EXPECT_EQ(cubin::parse_cubin(c.cubin).sm, 90);
  EXPECT_NE(c.ptx.find(".entry k_mixed"), std::string::npos);  // the compute_90 PTX
}

TEST(LintCheck, PtxOnlyImageHasNoResources) {
  KC_NEED_FIXTURES();
  testing::TempDir out;
  const auto cap = testing::make_capture(out.path(), fixture("kernels.ptx"), "k_mixed", 256);
  LintOptions o = no_sass();
  LintReport r = lint(cap, o);
  EXPECT_FALSE(r.resources);
  EXPECT_FALSE(r.occupancy);
  EXPECT_EQ(find_check(r, "resources")->status, Status::Info);
  EXPECT_TRUE(r.passed());
  o.checks.max_registers = 64;  // a limit that cannot be checked fails rather than passes
  EXPECT_FALSE(lint(cap, o).passed());
  // Patterns still search the PTX.
  o = no_sass();
  o.checks.required_patterns = {"bar\\.sync"};
  o.checks.forbidden_patterns = {"\\bst\\.local\\b"};
  r = lint(cap, o);
  EXPECT_EQ(find_check(r, "required /bar\\.sync/")->status, Status::Pass) << to_text(r);
  EXPECT_NE(find_check(r, "required /bar\\.sync/")->detail.find("found in PTX"), std::string::npos);
}

TEST(LintCheck, PatternsWithoutAnythingToSearchFail) {
  KC_NEED_FIXTURES();
  testing::TempDir out;
  const auto cap = testing::make_capture(out.path(), fixture("lint_sm90.cubin"), "k_smem", 256);
  LintOptions o = no_sass();
  o.checks.forbidden_patterns = {"LDL"};
  const LintReport r = lint(cap, o);
  EXPECT_EQ(find_check(r, "forbidden /LDL/")->status, Status::Fail);
}

TEST(LintCheck, KernelNotInTheImage) {
  KC_NEED_FIXTURES();
  testing::TempDir out;
  const auto cap = testing::make_capture(out.path(), fixture("lint_sm90.cubin"), "k_absent", 256);
  try {
    lint(cap, no_sass());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("k_absent"), std::string::npos);
  }
}

TEST(LintCheck, SassChecksOnTheFixture) {
  KC_NEED_FIXTURES();
  KC_NEED_NVDISASM(tool);
  testing::TempDir a, b;
  LintOptions o;
  o.disassembler = tool;
  o.checks.max_spills = 0;
  o.checks.required_patterns = {"BAR\\.SYNC", "FFMA"};
  o.checks.forbidden_patterns = {"\\b(STL|LDL)\\b"};
  LintReport r = lint(testing::make_capture(a.path(), fixture("lint_sm90.cubin"), "k_smem", 1024), o);
  EXPECT_TRUE(r.passed()) << to_text(r);
  ASSERT_TRUE(r.mix);
  EXPECT_EQ(r.mix->barriers, 1u);
  EXPECT_EQ(find_check(r, "barriers")->detail, "1 BAR instructions");
  ASSERT_NE(find_check(r, "instruction mix"), nullptr);

  r = lint(testing::make_capture(b.path(), fixture("lint_sm90.cubin"), "k_spill", 1024), o);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(find_check(r, "spills")->status, Status::Fail);
  EXPECT_EQ(find_check(r, "forbidden /\\b(STL|LDL)\\b/")->status, Status::Fail);
  EXPECT_EQ(find_check(r, "required /BAR\\.SYNC/")->status, Status::Fail);  // k_spill has no barrier
  EXPECT_GT(to_json(r)["sass"]["local_stores"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace kerncap::lint
