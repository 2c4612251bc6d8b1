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
#include "kerncap/replay.h"

namespace {
namespace fs = std::filesystem;
using namespace kerncap::format;

class EngineCApi : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    out_ = fs::temp_directory_path() /
           ("kerncap-engine-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(out_);
    const fs::path dir = out_ / kCaptureDirName;
    fs::create_directories(dir / "mem");
    fs::create_directories(dir / "image");
    Manifest m;
    m.tool_version = "test";
    m.mangled_name = "_Z6kernelPf";
    m.demangled_name = "kernel(float*)";
    m.params_size = 8;
    m.params = {{0, 8}};
    m.image_file = "image/00000000000000ab.cubin";
    m.image_kind = "cubin";
    m.image_hash = 0xab;
    m.regions = {{0, MemKind::Device, 0x7f0000000000ull, 256, "mem/0.bin", 0, ""}};
    const std::vector<uint8_t> params(8, 0x11), image(100, 0x7f), r0(256, 1);
    write_file(dir / m.params_file, params.data(), params.size());
    write_file(dir / m.image_file, image.data(), image.size());
    write_file(dir / "mem/0.bin", r0.data(), r0.size());
    write_file(dir / m.after_file, nullptr, 0);
    write_json_atomic(dir / kManifestName, to_json(m));
  }
  void TearDown() override { fs::remove_all(out_); }
  fs::path out_;
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
