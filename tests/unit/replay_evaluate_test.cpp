// The evaluation loop's host-side parts: its options, reading and checking a variant image
// before any CUDA call, and the result line it shares with `kerncap validate`.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "common/error.hpp"
#include "cubin_fixtures.hpp"
#include "format/capture_dir.hpp"
#include "replay/evaluate.hpp"
#include "replay/relocation.hpp"
#include "replay/validate.hpp"
#include "replay/variant_image.hpp"
#include "scratch_capture.hpp"

namespace {
namespace fs = std::filesystem;
using namespace kerncap;
using namespace kerncap::replay;
using kerncap::cubin::testing::fixture;
using nlohmann::json;

// The error kind and message a call throws ("" when it does not throw).
template <typename F>
std::pair<ErrorKind, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::Internal, ""};
}

class ReplayEvaluate : public kerncap::testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    kerncap::testing::write_small_capture(out_);
    manifest_ = format::open_capture(out_);
  }
  format::Capture manifest_;  // the capture (OUT/capture), opened
};

TEST_F(ReplayEvaluate, OptionsDefaultToATimedEvaluationWithFewLaunches) {
  const EvaluateOptions o = evaluate_options_from_json(json::object(), manifest_);
  EXPECT_TRUE(o.time);
  EXPECT_EQ(o.timing.warmup, 1);
  EXPECT_EQ(o.timing.iterations, 10);
  EXPECT_EQ(o.timing.restore, RestoreMode::Written);
  EXPECT_EQ(o.policy.fuzz, 0u);
  EXPECT_EQ(o.policy.seed, 1u);
  EXPECT_TRUE(o.keep_loaded);
  EXPECT_FALSE(o.policy.forced);
  EXPECT_FALSE(o.policy.invariants.any());
}

TEST_F(ReplayEvaluate, OptionsTakeTheTimingKeysOfKcTime) {
  const EvaluateOptions o = evaluate_options_from_json(
      json{{"time", false}, {"warmup", 0}, {"iterations", 5}, {"timer", "events"}, {"cache", "cold"},
           {"fuzz", 7}, {"seed", 9}, {"keep_loaded", false}, {"unknown", 1}},
      manifest_);
  EXPECT_FALSE(o.time);
  EXPECT_EQ(o.timing.warmup, 0);
  EXPECT_EQ(o.timing.iterations, 5);
  EXPECT_EQ(o.timing.timer, TimerKind::Events);
  EXPECT_EQ(o.timing.cache, CacheMode::Cold);
  EXPECT_EQ(o.policy.fuzz, 7u);
  EXPECT_EQ(o.policy.seed, 9u);
  EXPECT_FALSE(o.keep_loaded);
}

TEST_F(ReplayEvaluate, BadOptionsAreRefusedWithTheirName) {
  auto bad = [&](const json& j) { return error_of([&] { evaluate_options_from_json(j, manifest_); }); };
  auto [kind, what] = bad(json{{"time", "yes"}});
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_NE(what.find("\"time\""), std::string::npos) << what;
  std::tie(kind, what) = bad(json{{"fuzz", -1}});
  EXPECT_NE(what.find("fuzz"), std::string::npos) << what;
  std::tie(kind, what) = bad(json{{"iterations", 0}});
  EXPECT_NE(kind, ErrorKind::Internal);
  EXPECT_FALSE(what.empty());
  std::tie(kind, what) = bad(json{{"timer", "sundial"}});
  EXPECT_NE(what.find("sundial"), std::string::npos) << what;
  // iterations 0 is fine when nothing is timed
  EXPECT_NO_THROW(evaluate_options_from_json(json{{"time", false}, {"iterations", 0}}, manifest_));
}

TEST_F(ReplayEvaluate, ASpecIsParsedAgainstTheCapture) {
  const EvaluateOptions o = evaluate_options_from_json(
      json::parse(R"({"spec": {"dtype": "bytes", "spans": [{"base": "0x7f0000000000", "size": 16, "dtype": "fp32"}]}})"),
      manifest_);
  ASSERT_TRUE(o.policy.forced);
  ASSERT_EQ(o.policy.forced->spans.size(), 1u);
  EXPECT_EQ(o.policy.forced->spans[0].dtype, compare::DType::F32);
  auto [kind, what] = error_of([&] {
    evaluate_options_from_json(json::parse(R"({"spec": {"spans": [{"base": 16, "size": 4}]}})"), manifest_);
  });
  EXPECT_EQ(kind, ErrorKind::Input) << what;  // a span in no captured region
}

// Python's Session.evaluate and `kerncap serve` read the reproducer's kerncap.toml as
// `kerncap validate` does: its invariants and tolerances judge them too.
TEST_F(ReplayEvaluate, TheReproducersKerncapTomlJudgesEveryEvaluation) {
  const fs::path toml = manifest_.dir.parent_path() / "kerncap.toml";
  auto put = [&](const std::string& text) { format::write_file(toml, text.data(), text.size()); };
  put("[invariants]\nno_nan = true\n[tolerances]\nfp32 = { atol = 0.01, rtol = 0.01 }\n");
  EvaluateOptions o = evaluate_options_from_json(json::object(), manifest_);
  EXPECT_TRUE(o.policy.invariants.no_nan);
  EXPECT_EQ(o.policy.invariants_from, toml.string());
  EXPECT_EQ(o.policy.tolerances.at(compare::DType::F32).atol, 0.01);
  o = evaluate_options_from_json(json{{"no_invariants", true}}, manifest_);
  EXPECT_FALSE(o.policy.invariants.any());
  put("[invariants]\nno_nan = 3\n");
  auto [kind, what] = error_of([&] { evaluate_options_from_json(json::object(), manifest_); });
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_NE(what.find("no_nan"), std::string::npos) << what;
}

TEST_F(ReplayEvaluate, AMissingOrEmptyImageFileIsAnInputErrorNamingIt) {
  auto [kind, what] = error_of([&] { read_variant_image(out_ / "nope.cubin"); });
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_NE(what.find("nope.cubin: no such file"), std::string::npos) << what;
  std::tie(kind, what) = error_of([&] { read_variant_image(out_); });
  EXPECT_NE(what.find("not a regular file"), std::string::npos) << what;
  format::write_file(out_ / "empty.cubin", nullptr, 0);
  std::tie(kind, what) = error_of([&] { read_variant_image(out_ / "empty.cubin"); });
  EXPECT_NE(what.find("empty"), std::string::npos) << what;
  std::tie(kind, what) = error_of([&] { variant_image({}, "image bytes"); });
  EXPECT_EQ(kind, ErrorKind::Input);
}

TEST_F(ReplayEvaluate, TheHashIsTheOneTheCaptureRecordsForItsImage) {
  const std::vector<uint8_t> image(100, 0x7f);  // write_small_capture's image
  EXPECT_EQ(image_hash(image), manifest_.manifest.image_hash);
  EXPECT_EQ(variant_image(image, "x").hash, manifest_.manifest.image_hash);
  EXPECT_EQ(read_variant_image(out_ / "capture" / manifest_.manifest.image_file).hash, manifest_.manifest.image_hash);
}

TEST_F(ReplayEvaluate, AnImageThatIsNoCodeObjectIsRefusedBeforeLoading) {
  const std::string text = "hello world";
  auto [kind, what] = error_of([&] {
    kernel_in_variant(std::vector<uint8_t>(text.begin(), text.end()), "notes.txt", "_Z6kernelPf");
  });
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_NE(what.find("notes.txt is not a CUDA code object"), std::string::npos) << what;
}

TEST_F(ReplayEvaluate, AnImageWithoutTheCapturedKernelIsRefusedNamingWhatItHas) {
  KC_NEED_FIXTURES();
  for (const char* name : {"kernels_sm90.cubin", "kernels.ptx", "multi.fatbin"}) {
    const std::vector<uint8_t> img = fixture(name);
    EXPECT_EQ(kernel_in_variant(img, name, "_Z5k_cppPfi"), "_Z5k_cppPfi") << name;
    auto [kind, what] = error_of([&] { kernel_in_variant(img, name, "_Z10vectorAddPKfS0_Pfi"); });
    EXPECT_EQ(kind, ErrorKind::Input) << name;
    EXPECT_NE(what.find(std::string(name) + " does not contain the captured kernel _Z10vectorAddPKfS0_Pfi"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("_Z5k_cppPfi"), std::string::npos) << "the kernels it has are listed: " << what;
  }
}

TEST(ReplayEvaluateLine, OtherFailuresTurnAPassIntoAFailOnly) {
  EXPECT_EQ(fail_line("Result: PASS (strong, 1 region)", "fuzz trials failed"),
            "Result: FAIL (fuzz trials failed; strong, 1 region)");
  EXPECT_EQ(fail_line("Result: PASS (x)", ""), "Result: PASS (x)");
  EXPECT_EQ(fail_line("Result: FAIL (x)", "fuzz trials failed"), "Result: FAIL (x)");
}

TEST(ReplayEvaluateRelocation, DroppingGlobalsKeepsCollisions) {
  RelocationMap m;
  m.add({0x1000, 0x2000, 0x9000, false});
  m.add({0x7000, 0x7100, 0xa000, true});
  m.drop_globals();
  EXPECT_EQ(m.moves().size(), 1u);
  EXPECT_EQ(m.translate(0x1000), 0x9000u);
  EXPECT_EQ(m.translate(0x7080), 0x7080u);
  m.add({0x7000, 0x7100, 0xb000, true});  // the next image's global
  EXPECT_EQ(m.translate(0x7080), 0xb080u);
  m.drop_globals();
  m.drop_globals();
  EXPECT_EQ(m.translate(0x7080), 0x7080u);
}

}  // namespace

namespace {

TEST(ReplayEvaluateResult, HasValidatesFieldsAndTheLoopsOwn) {
  Evaluation e;
  e.kernel = "kernel(float*)";
  e.image = "v.cubin";
  e.line = "Result: PASS (x)";
  e.image_hash = 0xab;
  e.loaded = true;
  e.memory = "written";
  const json j = e.to_json();
  for (const char* key : {"result", "line", "regions", "kernel", "image", "device", "relocated_regions",
                          "rewritten_words", "determinism_checked", "timing", "image_hash", "captured_image", "loaded",
                          "memory", "seconds"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["result"], "PASS");
  EXPECT_TRUE(j["timing"].is_null());
  EXPECT_FALSE(j.contains("fuzz"));
  EXPECT_EQ(j["loaded"], true);
}

TEST(ReplayEvaluateResult, PhasesSayWhereTheTimeWentInOrderBesideTheVerdict) {
  Evaluation e;
  e.line = "Result: PASS (x)";
  EXPECT_TRUE(e.to_json()["phases"].is_object());
  EXPECT_TRUE(e.to_json()["phases"].empty());
  e.phases = {{"image", 0.001}, {"restore", 0.0}, {"launch", 0.002}, {"compare", 0.003}, {"time", 0.004}};
  const json j = e.to_json();
  ASSERT_EQ(j["phases"].size(), 5u);
  EXPECT_DOUBLE_EQ(j["phases"]["compare"].get<double>(), 0.003);
  EXPECT_DOUBLE_EQ(j["phases"]["time"].get<double>(), 0.004);
  // A profile, not part of the verdict: the result and line do not depend on it.
  Evaluation plain;
  plain.line = e.line;
  EXPECT_EQ(plain.to_json()["result"], j["result"]);
  EXPECT_EQ(plain.to_json()["line"], j["line"]);
}

TEST(ReplayEvaluateResult, AFailedFuzzTrialFailsTheEvaluation) {
  Evaluation e;
  e.fuzz.emplace();
  e.fuzz->trials = 3;
  EXPECT_TRUE(e.pass());
  e.fuzz->failures.push_back({1, false, 0, std::nullopt, "differs"});
  EXPECT_FALSE(e.pass());
  const json j = e.to_json();
  EXPECT_EQ(j["result"], "FAIL");
  EXPECT_EQ(j["fuzz"]["result"], "FAIL");
}

}  // namespace

TEST(VariantImage, AFileLocalKernelIsFoundInAnotherCompilesScope) {
  const std::string captured = "__nv_static_45__3a6b1d9f_10_rows_cu_9c5fe5b1__Z7rowSumsPKdPdi";
  const std::vector<std::string> names = {"_Z5otherv", "__nv_static_45__77aa01c2_10_rows_cu_0b1d2e3f__Z7rowSumsPKdPdi"};
  EXPECT_EQ(static_counterpart(names, captured), names[1]);
  // Not a static kernel, no such name, or two of them: no guess.
  EXPECT_FALSE(static_counterpart(names, "_Z7rowSumsPKdPdi").has_value());
  EXPECT_FALSE(static_counterpart({"_Z5otherv"}, captured).has_value());
  EXPECT_FALSE(static_counterpart({names[1], "__nv_static_45__11111111_10_rows_cu_22222222__Z7rowSumsPKdPdi"}, captured)
                   .has_value());
  // An anonymous-namespace kernel, as nvcc 13 named it in the application and in a
  // -DKC_KERNEL_ONLY recompile of the same file (measured: tests/gpu/untyped_apps/shared_rows.cu).
  const std::string app = "_ZN43_GLOBAL__N__bf7e0313_14_shared_rows_cu_main7rowSumsEPKdPdi";
  const std::string variant = "_ZN53_GLOBAL__N__bf7e0313_14_shared_rows_cu_f044fc41_263507rowSumsEPKdPdi";
  EXPECT_EQ(static_counterpart({"_Z5otherv", variant}, app), variant);
}
