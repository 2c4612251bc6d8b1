// OUT/regime-kernels.json (format/regime_kernels.hpp): written and read back unchanged;
// anything but exactly a version-1 index refused with the field named; each kernel's
// directory one plain name inside OUT; parts that exceed their whole refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "common/error.hpp"
#include "format/regime_kernels.hpp"

using namespace kerncap::format;
namespace fs = std::filesystem;

namespace {

RegimeKernels two_kernels() {
  RegimeKernels r;
  r.application = "python generate.py";
  r.kernels = {{"00-rms_norm", "_Z8rms_normPK13__nv_bfloat16PS_ii", "rms_norm(__nv_bfloat16 const*, ...)", 7, 30, 900,
                5000, 2, 2},
               {"01-silu", "silu_kernel", "silu_kernel", 7, 12, 300, 5000, 3, 1}};
  return r;
}

std::string refusal(const std::string& text) {
  try {
    regime_kernels_from_json(text, "regime-kernels.json");
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input) << e.what();
    return e.what();
  }
  return "";
}

std::string with(const std::function<void(nlohmann::json&)>& f) {
  nlohmann::json j = to_json(two_kernels());
  f(j);
  return j.dump();
}

}  // namespace

TEST(RegimeKernels, RoundTripThroughAFile) {
  const fs::path dir = fs::temp_directory_path() / ("kerncap_regime_kernels_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EXPECT_FALSE(has_regime_kernels(dir));
  write_regime_kernels(dir, two_kernels());
  EXPECT_TRUE(has_regime_kernels(dir));
  EXPECT_EQ(read_regime_kernels(dir), two_kernels());
  fs::remove_all(dir);
}

TEST(RegimeKernels, RefusesOtherFormatsAndVersions) {
  EXPECT_NE(refusal(with([](auto& j) { j["format"] = "kerncap-regimes"; })).find("format"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["version"] = 2; })).find("version"), std::string::npos);
  EXPECT_NE(refusal("[1, 2]"), "");
  EXPECT_NE(refusal(with([](auto& j) { j.erase("kernels"); })).find("kernels"), std::string::npos);
}

TEST(RegimeKernels, DirectoriesStayInsideOut) {
  for (const char* bad : {"../other", "a/b", ".hidden", "", "/etc"})
    EXPECT_NE(refusal(with([&](auto& j) { j["kernels"][0]["dir"] = bad; })).find("dir"), std::string::npos) << bad;
  EXPECT_NE(refusal(with([](auto& j) { j["kernels"][1]["dir"] = "00-rms_norm"; })).find("repeats"), std::string::npos);
}

TEST(RegimeKernels, PartsCannotExceedTheirWhole) {
  // A kernel with more GPU time than the application, more captured regimes than listed.
  EXPECT_NE(refusal(with([](auto& j) { j["kernels"][0]["time_ns"] = 6000; })).find("time_ns"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["kernels"][1]["captured"] = 4; })).find("captured"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["kernels"][0]["regimes"] = 65; })).find("regimes"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["kernels"][0]["launches"] = -1; })).find("launches"), std::string::npos);
}
