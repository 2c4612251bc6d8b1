// `kerncap run`'s verdict from the runs' facts.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.hpp"
#include "extract/swap_run.hpp"

namespace kerncap::extract {
namespace {

RunArm arm(size_t i, bool swapped, double wall, uint64_t kernel_ns, uint64_t launches, uint64_t served) {
  RunArm a;
  a.index = i;
  a.swapped = swapped;
  a.wall_s = wall;
  a.exit.exited = true;
  a.kernel_ns = kernel_ns;
  a.gpu_ns = kernel_ns * 2;
  a.launches = launches;
  a.swapped_launches = served;
  return a;
}

TEST(SwapRun, VerdictFromTheRuns) {
  SwapRunResult r;
  for (size_t i = 0; i < 6; ++i) {
    r.runs.push_back(arm(2 * i, false, 2.0, 1000, 10, 0));
    r.runs.push_back(arm(2 * i + 1, true, 1.5, 500, 10, 10));
  }
  std::vector<std::string> out(12, "result 42\n");
  summarise(r, out, false);
  EXPECT_EQ(r.verdict, "ok") << r.why;
  EXPECT_DOUBLE_EQ(r.kernel_ratio.median, 2.0);
  EXPECT_TRUE(r.kernel_ratio.exact95);
  EXPECT_NEAR(r.wall_ratio.median, 4.0 / 3.0, 1e-12);

  out[3] = "result 41\n";
  SwapRunResult differs = r;
  summarise(differs, out, false);
  EXPECT_EQ(differs.verdict, "output_differs");
  EXPECT_NE(differs.first_difference.find("run 3, line 1: 'result 41' (unmodified: 'result 42')"), std::string::npos)
      << differs.first_difference;

  SwapRunResult partial = r;
  partial.runs[5].swapped_launches = 9;
  summarise(partial, std::vector<std::string>(12, "x"), false);
  EXPECT_EQ(partial.verdict, "not_swapped");

  SwapRunResult refused = r;
  refused.runs[1].refused = {"pid 1: its parameter layout differs"};
  summarise(refused, std::vector<std::string>(12, "x"), false);
  EXPECT_EQ(refused.verdict, "refused");

  SwapRunResult checked = r;
  checked.runs[3].check_status = 1;
  checked.runs[1].check_status = 0;
  summarise(checked, out, true);  // with --check, the check decides, not stdout
  EXPECT_EQ(checked.verdict, "check_failed");
  EXPECT_EQ(checked.checks_run, 2u);

  SwapRunResult crashed = r;
  crashed.runs[1].exit.exited = false;
  crashed.runs[1].exit.code = 11;
  summarise(crashed, std::vector<std::string>(12, "x"), false);
  EXPECT_EQ(crashed.verdict, "app_failed");
}

TEST(SwapRun, ShadowVerdictNamesTheFirstLaunchThatDiffers) {
  SwapRunResult r;
  r.runs.push_back(arm(0, false, 2.0, 1000, 10, 0));
  r.runs.push_back(arm(1, true, 2.5, 1000, 10, 0));  // shadow: nothing swapped
  r.runs[1].shadow_checked = 10;
  r.runs[1].shadow_seconds = 0.5;
  summarise(r, {"same", "same"}, false, true);
  EXPECT_EQ(r.verdict, "ok") << r.why;
  EXPECT_DOUBLE_EQ(r.shadow_overhead_s, 0.05);
  r.runs[1].shadow_failed = 3;
  r.runs[1].first_failure = {{"launch", 4}, {"grid", {65537, 1, 1}}, {"block", {256, 1, 1}}, {"param", 0},
                             {"summary", "3 of 16777219 fp32 elements differ"}};
  summarise(r, {"same", "same"}, false, true);
  EXPECT_EQ(r.verdict, "shadow_failed");
  EXPECT_NE(r.why.find("launch 4 of the kernel (grid [65537,1,1]"), std::string::npos) << r.why;
  SwapRunResult none;
  none.runs.push_back(arm(0, false, 2.0, 1000, 10, 0));
  none.runs.push_back(arm(1, true, 2.0, 1000, 10, 0));
  none.runs[1].shadow_skipped = 10;
  none.runs[1].shadow_skip_reason = "the launch is recorded into a CUDA graph";
  summarise(none, {"a", "a"}, false, true);
  EXPECT_EQ(none.verdict, "not_checked");
}

TEST(SwapRun, OneUnmodifiedRunCannotTellATimingLineFromAWrongResult) {
  SwapRunResult r;
  r.runs.push_back(arm(0, false, 2.0, 1000, 10, 0));
  r.runs.push_back(arm(1, true, 1.5, 500, 10, 10));
  summarise(r, {"took 2.0 ms\nPASS\n", "took 1.5 ms\nPASS\n"}, false);
  EXPECT_EQ(r.verdict, "output_differs");
  EXPECT_NE(r.why.find("--repeat 2 shows it"), std::string::npos) << r.why;
}

TEST(SwapRun, TheReportSaysWhatWasRunAndFound) {
  SwapRunOptions o;
  o.app.argv = {"./app", "7"};
  o.pairs = 6;
  SwapPlan p;
  p.spec = {"_Z4vaddPfS_S_i", "_Z4vaddPfS_S_i", "/v.cubin", true};
  p.target = "iso/vadd";
  p.capture = "/iso/vadd/capture";
  p.demangled = "vadd(float*, float*, float*, int)";
  p.layout_checked = true;
  o.plans = {p};
  SwapRunResult r;
  for (size_t i = 0; i < 6; ++i) {
    r.runs.push_back(arm(2 * i, false, 2.0, 1000, 10, 0));
    r.runs.push_back(arm(2 * i + 1, true, 1.5, 500, 10, 10));
  }
  summarise(r, std::vector<std::string>(12, "same\n"), false);
  const nlohmann::json j = run_report_json(o, r);
  EXPECT_EQ(j["format"], "kerncap-run-report");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["verdict"], "ok");
  EXPECT_EQ(j["runs"].size(), 12u);
  EXPECT_EQ(j["summary"]["kernel_ns"]["ratio"]["median"], 2.0);
  EXPECT_EQ(j["swaps"][0]["layout_checked"], true);
  const std::string t = run_report_text(o, r);
  EXPECT_NE(t.find("checked against the capture /iso/vadd/capture"), std::string::npos) << t;
  EXPECT_NE(t.find("10 host launches (10 served by the variant)"), std::string::npos) << t;
  EXPECT_NE(t.find("2.000x [2.000, 2.000]"), std::string::npos) << t;
  EXPECT_NE(t.find("verdict: ok"), std::string::npos) << t;

  o.shadow_every = 4;
  r.runs[1].shadow_checked = 3;
  r.runs[1].shadow_seconds = 0.003;
  const std::string shadow = run_report_text(o, r);
  EXPECT_NE(shadow.find("every 4 launch(es) of the kernel checked against the variant: 3 checked"), std::string::npos)
      << shadow;
  EXPECT_EQ(run_report_json(o, r)["mode"], "shadow");
}

TEST(SwapRun, WarmUpRunsAreJudgedButLeftOutOfTheTimes) {
  SwapRunResult r;
  r.runs.push_back(arm(0, false, 9.0, 9000, 10, 0));  // the first pair pays for caches and JIT
  r.runs.push_back(arm(1, true, 9.0, 9000, 10, 10));
  r.runs[0].warmup = r.runs[1].warmup = true;
  r.runs.push_back(arm(2, false, 2.0, 1000, 10, 0));
  r.runs.push_back(arm(3, true, 1.0, 500, 10, 10));
  summarise(r, std::vector<std::string>(4, "x"), false);
  EXPECT_EQ(r.kernel[0].n, 1u);
  EXPECT_DOUBLE_EQ(r.kernel_ratio.median, 2.0);
  r.runs[1].swapped_launches = 3;  // a warm-up run still counts for the verdict
  summarise(r, std::vector<std::string>(4, "x"), false);
  EXPECT_EQ(r.verdict, "not_swapped");
}

TEST(SwapRun, FirstLineDifference) {
  EXPECT_EQ(first_line_difference("a\nb\n", "a\nb\n"), "");
  EXPECT_EQ(first_line_difference("a\nb\n", "a\nc\n"), "line 2: 'c' (unmodified: 'b')");
  EXPECT_EQ(first_line_difference("a\n", "a\nb\n"), "line 2: 'b' (unmodified: it ends)");
}

}  // namespace
}  // namespace kerncap::extract
