// The document over a regime set (cli/validate_regimes.hpp) from per-regime outcomes: the
// weighted speed-up and its Amdahl projection, failing regimes named, --min-speedup on the
// weighted figure, regressions listed.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/validate_regimes.hpp"
#include "common/error.hpp"
#include "format/regime_kernels.hpp"
#include "cli_run.hpp"

using namespace kerncap;
using replay::RegimeOutcome;

namespace {

format::RegimesIndex index3() {
  format::RegimesIndex r;
  r.demangled = "scaleShift";
  r.launches = 55;
  r.time_ns = 1000;
  r.app_time_ns = 2000;
  r.regimes = {{"00-big", {16384, 1, 1}, {256, 1, 1}, {}, 0, 10, 600, 0, 0.6, true, ""},
               {"01-odd", {3907, 1, 1}, {256, 1, 1}, {}, 0, 5, 300, 1, 0.3, true, ""},
               {"02-small", {16, 1, 1}, {256, 1, 1}, {}, 0, 40, 100, 2, 0.1, true, ""}};
  return r;
}

RegimeOutcome outcome(const format::RegimeEntry& e, const char* result, std::optional<double> speedup) {
  RegimeOutcome o{e, {{"result", result}, {"strength", "strong"}, {"line", std::string("Result: ") + result}}, "",
                  speedup};
  return o;
}

}  // namespace

TEST(RegimeVerdict, WeightedSpeedupIsTimeOverTime) {
  const auto idx = index3();
  const std::vector<RegimeOutcome> o = {outcome(idx.regimes[0], "PASS", 2.0), outcome(idx.regimes[1], "PASS", 1.0),
                                        outcome(idx.regimes[2], "PASS", 0.5)};
  const nlohmann::json d = replay::regime_verdict(idx, o, std::nullopt, true);
  // old 600 + 300 + 100 = 1000 ns; new 300 + 300 + 200 = 800 ns.
  EXPECT_NEAR(d["weighted_speedup"].get<double>(), 1000.0 / 800.0, 1e-12);
  // The application: 2000 ns, of which the kernel's 1000 become 800.
  EXPECT_NEAR(d["app_projection"].get<double>(), 2000.0 / 1800.0, 1e-12);
  EXPECT_EQ(d["result"], "PASS");
  EXPECT_EQ(d["regressed"], nlohmann::json({"02-small"}));
  EXPECT_NE(d["line"].get<std::string>().find("slower on 02-small"), std::string::npos) << d["line"];
  EXPECT_EQ(d["format"], replay::kRegimeVerdictFormat);
}

TEST(RegimeVerdict, AFailingRegimeFailsTheSetAndIsNamed) {
  const auto idx = index3();
  const std::vector<RegimeOutcome> o = {outcome(idx.regimes[0], "PASS", 1.1), outcome(idx.regimes[1], "FAIL", 1.1),
                                        outcome(idx.regimes[2], "PASS", 1.1)};
  const nlohmann::json d = replay::regime_verdict(idx, o, std::nullopt, true);
  EXPECT_EQ(d["result"], "FAIL");
  EXPECT_EQ(d["line"], "Result: FAIL (1 of 3 regime(s) fail: 01-odd)");
}

TEST(RegimeVerdict, MinSpeedupJudgesTheWeightedFigure) {
  const auto idx = index3();
  // Fast where most of the time is, slow on the small regime: x1.25 weighted.
  const std::vector<RegimeOutcome> o = {outcome(idx.regimes[0], "PASS", 2.0), outcome(idx.regimes[1], "PASS", 1.0),
                                        outcome(idx.regimes[2], "PASS", 0.5)};
  EXPECT_EQ(replay::regime_verdict(idx, o, 1.2, true)["result"], "PASS");
  const nlohmann::json d = replay::regime_verdict(idx, o, 1.3, true);
  EXPECT_EQ(d["result"], "FAIL");
  EXPECT_NE(d["line"].get<std::string>().find("weighted speed-up x1.250 is below the x1.300"), std::string::npos)
      << d["line"];
}

TEST(RegimeVerdict, NoWeightedFigureWithoutEveryRegimeTimed) {
  const auto idx = index3();
  std::vector<RegimeOutcome> o = {outcome(idx.regimes[0], "PASS", 2.0), outcome(idx.regimes[1], "PASS", std::nullopt),
                                  outcome(idx.regimes[2], "PASS", 1.0)};
  EXPECT_TRUE(replay::regime_verdict(idx, o, std::nullopt, true)["weighted_speedup"].is_null());
  EXPECT_EQ(replay::regime_verdict(idx, o, 1.1, true)["result"], "FAIL");  // asked for, not measurable
  // A child that gave no verdict is a FAIL naming it.
  o[1] = RegimeOutcome{idx.regimes[1], nullptr, "`kerncap validate --regime 01-odd` ended with status 70", std::nullopt};
  const nlohmann::json d = replay::regime_verdict(idx, o, std::nullopt, true);
  EXPECT_EQ(d["result"], "FAIL");
  EXPECT_EQ(d["regimes"][1]["line"], "`kerncap validate --regime 01-odd` ended with status 70");
}

TEST(RegimeVerdict, TheCommandRefusesASetWithNothingToJudgeAndRegimesOutsideIt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "kerncap-validate-regimes-cli";
  fs::remove_all(dir);
  fs::create_directories(dir);
  format::RegimesIndex idx = index3();
  for (auto& e : idx.regimes) {
    e.captured = false;
    e.why = "never launched";
  }
  format::write_regimes(dir, idx);
  const std::string kc = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";
  auto r = test::run_shell(kc + " validate " + dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no regime of this set was captured"), std::string::npos) << r.out;
  r = test::run_shell(kc + " validate " + dir.string() + " --regime 00-big");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("that regime was not captured (never launched)"), std::string::npos) << r.out;
  r = test::run_shell(kc + " validate " + dir.string() + " --regime ../etc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("lists no such regime"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(RegimeKernelsVerdict, EveryKernelMustPassAndFailuresAreNamed) {
  const auto idx = index3();
  const nlohmann::json pass = replay::regime_verdict(
      idx, {outcome(idx.regimes[0], "PASS", std::nullopt), outcome(idx.regimes[1], "PASS", std::nullopt)}, std::nullopt,
      false);
  const nlohmann::json fail = replay::regime_verdict(
      idx, {outcome(idx.regimes[0], "PASS", std::nullopt), outcome(idx.regimes[1], "FAIL", std::nullopt)}, std::nullopt,
      false);
  nlohmann::json d = cli::regime_kernels_verdict({{"00-norm", pass}, {"01-gemm", pass}});
  EXPECT_EQ(d["result"], "PASS");
  EXPECT_EQ(d["line"], "Result: PASS (2 kernel(s), 4 regime(s), every one passes)");
  EXPECT_EQ(d["kernels"][1]["dir"], "01-gemm");
  EXPECT_EQ(d["format"], cli::kRegimeKernelsVerdictFormat);
  d = cli::regime_kernels_verdict({{"00-norm", pass}, {"01-gemm", fail}});
  EXPECT_EQ(d["result"], "FAIL");
  EXPECT_EQ(d["failed"], nlohmann::json::array({"01-gemm"}));
  EXPECT_EQ(d["line"], "Result: FAIL (1 of 2 kernel(s) fail: 01-gemm)");
}

TEST(RegimeKernelsVerdict, TheCommandRefusesAVariantForSeveralKernelsAndPathsOutsideThem) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "kerncap-validate-regime-kernels-cli";
  fs::remove_all(dir);
  fs::create_directories(dir / "00-scaleShift");
  format::RegimesIndex idx = index3();
  format::write_regimes(dir / "00-scaleShift", idx);
  format::RegimeKernels k;
  k.application = "./regimes";
  k.kernels = {{"00-scaleShift", "_Z10scaleShiftPKfPfif", "scaleShift", 1, 55, 1000, 2000, 3, 3}};
  format::write_regime_kernels(dir, k);
  const std::string kc = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";
  auto r = test::run_shell(kc + " validate " + dir.string() + " --cubin /dev/null");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("a variant is judged on the set of its own kernel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("00-scaleShift"), std::string::npos) << r.out;
  r = test::run_shell(kc + " validate " + dir.string() + " --regime 07-other/00-big");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("lists no kernel set 07-other"), std::string::npos) << r.out;
  r = test::run_shell(kc + " validate " + dir.string() + " --regime 00-scaleShift/../../etc");
  EXPECT_EQ(r.code, 2) << r.out;
  fs::remove_all(dir);
}

namespace {

// An outcome whose child timed both images: captured and variant medians in ms.
RegimeOutcome timed(const format::RegimeEntry& e, double captured_ms, double variant_ms) {
  RegimeOutcome o = outcome(e, "PASS", captured_ms / variant_ms);
  o.verdict["speedup"] = {{"captured_median_ms", captured_ms}, {"variant_median_ms", variant_ms}};
  return o;
}

}  // namespace

TEST(RegimeVerdict, TheApplicationsExcessOverTheReplayIsLeftAsItWas) {
  format::RegimesIndex idx = index3();
  // 00-big: 10 launches, 600 ns in the application (60 ns each); 02-small: 40 launches, 100 ns.
  idx.regimes[0].time_ns = 600;
  idx.regimes[2].time_ns = 100;
  // The application ran 00-big slower (60 ns) than its replay (40 ns): the variant's 10 ns
  // more per launch adds 100 ns, not 50 % of 600.
  RegimeOutcome big = timed(idx.regimes[0], 40e-6, 50e-6);
  EXPECT_NEAR(replay::regime_time_with(idx.regimes[0], big), 700.0, 1e-9);
  // The application ran 02-small faster (2.5 ns) than its replay (5 ns): the ratio, x0.5.
  RegimeOutcome small = timed(idx.regimes[2], 5e-6, 10e-6);
  EXPECT_NEAR(replay::regime_time_with(idx.regimes[2], small), 200.0, 1e-9);
  // Equal: both models agree.
  RegimeOutcome odd = timed(idx.regimes[1], 60e-6, 30e-6);  // 300 ns over 5 launches: 60 each
  EXPECT_NEAR(replay::regime_time_with(idx.regimes[1], odd), 150.0, 1e-9);
  const nlohmann::json d = replay::regime_verdict(idx, {big, odd, small}, std::nullopt, true);
  EXPECT_NEAR(d["weighted_speedup"].get<double>(), 1000.0 / (700 + 150 + 200), 1e-12);
  // The ratios alone: 600 / 0.8 + 300 / 2 + 100 / 0.5 = 1100.
  EXPECT_NEAR(d["weighted_speedup_ratio"].get<double>(), 1000.0 / 1100.0, 1e-12);
  EXPECT_NEAR(d["app_projection"].get<double>(), 2000.0 / (2000 - 1000 + 1050), 1e-12);
}

// The C ABI's form (kc_regime_verdict, what the evaluation pool calls): the same document as
// the CLI's outcomes give, whatever order the regimes were judged in; a set judged in part,
// twice, or on a regime it does not hold is refused, never a verdict over part of it.
namespace {
nlohmann::json as_outcome(const RegimeOutcome& o) {
  return {{"dir", o.regime.dir}, {"verdict", o.verdict.is_null() ? nlohmann::json(nullptr) : [&] {
             nlohmann::json v = o.verdict;
             if (o.speedup) v["speedup"] = {{"speedup", *o.speedup}};
             return v;
           }()}, {"error", o.error}};
}
}  // namespace

TEST(RegimeVerdictFromJson, SameDocumentInAnyOrder) {
  const auto idx = index3();
  std::vector<RegimeOutcome> o = {outcome(idx.regimes[0], "PASS", 2.0), outcome(idx.regimes[1], "PASS", 1.0),
                                  outcome(idx.regimes[2], "PASS", 0.5)};
  for (auto& x : o) x.verdict["speedup"] = {{"speedup", *x.speedup}};
  const nlohmann::json want = replay::regime_verdict(idx, o, 1.1, true);
  const nlohmann::json shuffled = {as_outcome(o[2]), as_outcome(o[0]), as_outcome(o[1])};
  const nlohmann::json got = replay::regime_verdict_from_json(idx, shuffled, {{"min_speedup", 1.1}, {"variant", true}});
  EXPECT_EQ(got, want);
  EXPECT_EQ(got["regimes"][0]["dir"], "00-big");
  EXPECT_NEAR(got["weighted_speedup"].get<double>(), 1000.0 / (300 + 300 + 200), 1e-9);
}

TEST(RegimeVerdictFromJson, NoVerdictIsAFailNamingWhy) {
  const auto idx = index3();
  const nlohmann::json outs = {as_outcome(outcome(idx.regimes[0], "PASS", 2.0)),
                               {{"dir", "01-odd"}, {"verdict", nullptr}, {"error", "the worker process died (signal 11)"}},
                               as_outcome(outcome(idx.regimes[2], "PASS", 1.0))};
  const nlohmann::json d = replay::regime_verdict_from_json(idx, outs, nlohmann::json::object());
  EXPECT_EQ(d["result"], "FAIL");
  EXPECT_EQ(d["failed"], nlohmann::json({"01-odd"}));
  EXPECT_EQ(d["regimes"][1]["line"], "the worker process died (signal 11)");
  EXPECT_TRUE(d["weighted_speedup"].is_null());
}

TEST(RegimeVerdictFromJson, PartTwiceOrForeignIsRefused) {
  auto idx = index3();
  const auto a = as_outcome(outcome(idx.regimes[0], "PASS", 1.0)), b = as_outcome(outcome(idx.regimes[1], "PASS", 1.0)),
             c = as_outcome(outcome(idx.regimes[2], "PASS", 1.0));
  const auto refused = [&](const nlohmann::json& outs, const nlohmann::json& opts, const std::string& says) {
    try {
      replay::regime_verdict_from_json(idx, outs, opts);
      ADD_FAILURE() << "accepted: " << outs.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  const nlohmann::json none = nlohmann::json::object();
  refused({a, b}, none, "no outcome for regime 02-small");
  refused({a, b, c, b}, none, "regime 01-odd given twice");
  refused({a, b, c, {{"dir", "09-other"}}}, none, "lists no regime 09-other");
  refused({a, b, {{"verdict", nullptr}}}, none, "string \"dir\"");
  refused(nlohmann::json::object(), none, "JSON array");
  refused({a, b, c}, {{"min_speedup", -1}}, "positive");
  refused({a, b, c}, {{"min_speed", 1.1}}, "unknown option");
  refused({a, b, c}, {{"variant", "yes"}}, "true or false");
  idx.regimes[2].captured = false;
  idx.regimes[2].why = "the application never reached it";
  refused({a, b, c}, none, "was not captured");
  EXPECT_EQ(replay::regime_verdict_from_json(idx, {b, a}, none)["regimes"].size(), 2u);  // the captured ones
}
