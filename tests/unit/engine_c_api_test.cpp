// The replay engine's C ABI as a binding sees it: version, capture info without a GPU,
// errors as exit codes with a message, never an exception across the boundary.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "format/capture_dir.hpp"
#include "format/regime_kernels.hpp"
#include "format/regimes_index.hpp"
#include "kerncap/replay.h"
#include "scratch_capture.hpp"

namespace {
namespace fs = std::filesystem;
using namespace kerncap::format;

class EngineCApi : public kerncap::testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    kerncap::testing::write_small_capture(out_);
  }
};

TEST_F(EngineCApi, VersionIsTheHeaders) {
  EXPECT_EQ(kc_abi_version(), KC_REPLAY_ABI_VERSION);
  EXPECT_STRNE(kc_version(), "");
}

TEST_F(EngineCApi, CaptureInfoNeedsNoGpu) {
  char* text = nullptr;
  ASSERT_EQ(kc_capture_info(out_.c_str(), &text), KC_OK) << kc_last_error();
  auto j = nlohmann::json::parse(text);
  kc_free(text);
  EXPECT_EQ(j["kernel"]["mangled"], "_Z6kernelPf");
  EXPECT_EQ(j["directory"], (out_ / "capture").string());
  EXPECT_STREQ(kc_last_error(), "");
}

TEST_F(EngineCApi, BadCaptureIsAnInputErrorWithAMessage) {
  fs::resize_file(out_ / "capture/mem/0.bin", 100);
  char* text = nullptr;
  EXPECT_EQ(kc_capture_info(out_.c_str(), &text), KC_E_INPUT);
  EXPECT_EQ(text, nullptr);
  EXPECT_NE(std::string(kc_last_error()).find("mem/0.bin"), std::string::npos) << kc_last_error();
  EXPECT_EQ(kc_capture_info((out_ / "nothing").c_str(), &text), KC_E_INPUT);
  EXPECT_EQ(kc_capture_info(nullptr, &text), KC_E_INPUT);  // usage errors share exit code 2
}

TEST_F(EngineCApi, NullSessionIsRefusedNotCrashed) {
  uint64_t a = 0;
  EXPECT_EQ(kc_translate(nullptr, 1, &a), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("no open session"), std::string::npos);
  EXPECT_EQ(kc_launch(nullptr), KC_E_INPUT);
  kc_close(nullptr);
  kc_free(nullptr);
}

TEST_F(EngineCApi, OpenWithoutADriverIsADeviceError) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); lib || dlopen("libcuda.so.1", RTLD_NOW))
    GTEST_SKIP() << "libcuda.so.1 loads here: the no-driver path cannot be tested";
  kc_session* s = reinterpret_cast<kc_session*>(0x1);
  EXPECT_EQ(kc_open(out_.c_str(), nullptr, &s), KC_E_DEVICE);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(kc_last_error()).find("libcuda"), std::string::npos) << kc_last_error();
}

TEST_F(EngineCApi, BadOptionsAreInputErrors) {
  kc_session* s = nullptr;
  EXPECT_EQ(kc_open(out_.c_str(), "[1,2]", &s), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("JSON object"), std::string::npos);
  EXPECT_EQ(kc_open(out_.c_str(), "{\"allow_relocate\": \"yes\"}", &s), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("allow_relocate"), std::string::npos);
}

}  // namespace

namespace {

class EngineEvaluate : public kerncap::testing::ScratchDir {};

TEST_F(EngineEvaluate, TheRevisionIsTheHeaders) { EXPECT_EQ(kc_abi_revision(), KC_REPLAY_ABI_REVISION); }

TEST_F(EngineEvaluate, AClosedOrMissingSessionIsAnInputError) {
  char* text = reinterpret_cast<char*>(0x1);
  EXPECT_EQ(kc_evaluate(nullptr, nullptr, nullptr, &text), KC_E_INPUT);
  EXPECT_EQ(text, nullptr);
  EXPECT_NE(std::string(kc_last_error()).find("no open session"), std::string::npos) << kc_last_error();
  const uint8_t bytes[4] = {1, 2, 3, 4};
  EXPECT_EQ(kc_evaluate_image(nullptr, bytes, sizeof bytes, "v", nullptr, &text), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("no open session"), std::string::npos) << kc_last_error();
}

TEST_F(EngineEvaluate, BadImageArgumentsAreNamedBeforeTheSession) {
  char* text = nullptr;
  EXPECT_EQ(kc_evaluate(nullptr, (out_ / "missing.cubin").c_str(), nullptr, &text), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("missing.cubin: no such file"), std::string::npos) << kc_last_error();
  EXPECT_EQ(kc_evaluate_image(nullptr, nullptr, 10, nullptr, nullptr, &text), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("image must not be NULL"), std::string::npos) << kc_last_error();
  const uint8_t bytes[1] = {0};
  EXPECT_EQ(kc_evaluate_image(nullptr, bytes, 0, "my variant", nullptr, &text), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("my variant is empty"), std::string::npos) << kc_last_error();
  EXPECT_EQ(kc_evaluate(nullptr, nullptr, nullptr, nullptr), KC_E_INPUT);
  EXPECT_NE(std::string(kc_last_error()).find("json_out"), std::string::npos) << kc_last_error();
}

}  // namespace

// kc_regime_verdict needs no GPU: the set's index and the verdicts the caller collected.
TEST_F(EngineCApi, RegimeVerdictThroughTheAbi) {
  RegimesIndex idx;
  idx.mangled = "_Z6kernelPf";
  idx.demangled = "kernel(float*)";
  idx.launches = 3;
  idx.time_ns = 300;
  idx.app_time_ns = 600;
  idx.regimes = {{"00-a", {4, 1, 1}, {64, 1, 1}, {}, 0, 2, 200, 0, 2.0 / 3, true, ""},
                 {"01-b", {1, 1, 1}, {64, 1, 1}, {}, 0, 1, 100, 1, 1.0 / 3, true, ""}};
  write_regimes(out_, idx);
  const std::string outcomes =
      R"([{"dir": "01-b", "verdict": {"result": "PASS", "line": "ok", "speedup": {"speedup": 1.0}}},
          {"dir": "00-a", "verdict": {"result": "PASS", "line": "ok", "speedup": {"speedup": 2.0}}}])";
  char* text = nullptr;
  ASSERT_EQ(kc_regime_verdict(out_.c_str(), outcomes.c_str(), R"({"min_speedup": 1.4})", &text), KC_OK)
      << kc_last_error();
  const auto j = nlohmann::json::parse(text);
  kc_free(text);
  EXPECT_EQ(j["format"], "kerncap-regime-verdict");
  EXPECT_EQ(j["result"], "PASS");  // 300 / (100 + 100) = 1.5
  EXPECT_NEAR(j["weighted_speedup"].get<double>(), 1.5, 1e-9);
  EXPECT_EQ(j["regimes"][0]["dir"], "00-a");
  EXPECT_EQ(kc_regime_verdict(out_.c_str(), R"([{"dir": "00-a", "verdict": null}])", nullptr, &text), KC_E_INPUT);
  EXPECT_EQ(text, nullptr);
  EXPECT_NE(std::string(kc_last_error()).find("no outcome for regime 01-b"), std::string::npos) << kc_last_error();
  EXPECT_EQ(kc_regime_verdict(out_.c_str(), "not json", nullptr, &text), KC_E_INPUT);
  EXPECT_EQ(kc_regime_verdict((out_ / "nothing").c_str(), "[]", nullptr, &text), KC_E_INPUT);
  EXPECT_EQ(kc_regime_verdict(nullptr, "[]", nullptr, &text), KC_E_INPUT);

  // The set as an evaluator lists it: each captured regime's directory, checked.
  EXPECT_EQ(kc_regime_set(out_.c_str(), &text), KC_E_INPUT);  // no 00-a directory yet
  EXPECT_NE(std::string(kc_last_error()).find("00-a"), std::string::npos) << kc_last_error();
  fs::create_directory(out_ / "00-a");
  fs::create_directory(out_ / "01-b");
  ASSERT_EQ(kc_regime_set(out_.c_str(), &text), KC_OK) << kc_last_error();
  const auto set = nlohmann::json::parse(text);
  kc_free(text);
  ASSERT_EQ(set["regimes"].size(), 2u);
  EXPECT_EQ(set["regimes"][1]["path"], (out_ / "01-b").string());
  EXPECT_EQ(set["regimes"][0]["share"], 2.0 / 3);
  // How every entry point judges a set's regimes, from the engine (validate's children too).
  EXPECT_EQ(set["judging"], nlohmann::json({{"speedup", true}, {"cache", "blend"}, {"min_speedup", "weighted"}}));
}

// OUT of several kernels' sets: a candidate belongs to one kernel, so the evaluator is told
// which sets there are, not handed a mixture.
TEST_F(EngineCApi, SeveralKernelsSetsAreRefusedNamingEach) {
  RegimeKernels k;
  k.application = "app";
  k.kernels = {{"00-norm", "_Z4normPf", "norm(float*)", 1, 10, 100, 1000, 2, 2},
               {"01-gemm", "_Z4gemmPf", "gemm(float*)", 1, 10, 100, 1000, 1, 1}};
  write_regime_kernels(out_, k);
  char* text = nullptr;
  EXPECT_EQ(kc_regime_set(out_.c_str(), &text), KC_E_INPUT);
  EXPECT_EQ(text, nullptr);
  const std::string why = kc_last_error();
  EXPECT_NE(why.find("holds the regime sets of 2 kernels"), std::string::npos) << why;
  EXPECT_NE(why.find((out_ / "01-gemm").string() + "  gemm(float*)"), std::string::npos) << why;
}
