// OUT/regimes.json (format/regimes_index.hpp): written and read back unchanged; anything but
// exactly a version-1 index refused with the field named, directories confined to OUT.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "format/regimes_index.hpp"

using namespace kerncap::format;
namespace fs = std::filesystem;

namespace {

RegimesIndex sample() {
  RegimesIndex r;
  r.mangled = "_Z10scaleShiftPKfPfif";
  r.demangled = "scaleShift(float const*, float*, int, float)";
  r.application = "./regimes";
  r.pid = 42;
  r.launches = 55;
  r.time_ns = 1000;
  r.app_time_ns = 4000;
  r.dropped_regimes = 1;
  r.dropped_launches = 5;
  r.dropped_ns = 100;
  r.regimes = {{"00-scaleShift", {16384, 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 10, 600, 0, 0.6, true, ""},
               {"01-scaleShift", {3907, 1, 1}, {256, 1, 1}, {0, 0, 0}, 0, 40, 300, 2, 0.3, false, "never launched"}};
  return r;
}

std::string refusal(const std::string& text) {
  try {
    regimes_from_json(text, "regimes.json");
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input) << e.what();
    return e.what();
  }
  return "";
}

std::string with(const std::function<void(nlohmann::json&)>& f) {
  nlohmann::json j = to_json(sample());
  f(j);
  return j.dump();
}

}  // namespace

TEST(RegimesIndex, RoundTrips) {
  const RegimesIndex r = sample();
  EXPECT_EQ(regimes_from_json(to_json(r).dump(), "x"), r);
  EXPECT_NEAR(r.coverage(), 0.6, 1e-12);  // the captured regime only

  const fs::path dir = fs::temp_directory_path() / "kerncap-regimes-index-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_FALSE(has_regimes(dir));
  write_regimes(dir, r);
  EXPECT_TRUE(has_regimes(dir));
  EXPECT_EQ(read_regimes(dir), r);
  fs::remove_all(dir);
}

TEST(RegimesIndex, RefusesWhatIsNotExactlyAnIndex) {
  EXPECT_NE(refusal("[]"), "");
  EXPECT_NE(refusal(with([](auto& j) { j["format"] = "kerncap-targets"; })), "");
  EXPECT_NE(refusal(with([](auto& j) { j["version"] = 2; })).find("version"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["regimes"][0]["share"] = 1.5; })).find("share"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["regimes"][0]["grid"] = {1, 1}; })).find("grid"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["regimes"][0]["block"][0] = 2048; })).find("block"), std::string::npos);
  EXPECT_NE(refusal(with([](auto& j) { j["regimes"][0]["launches"] = -1; })), "");
  EXPECT_NE(refusal(with([](auto& j) { j["regimes"][1]["dir"] = "00-scaleShift"; })).find("repeats"), std::string::npos);
  // The parts cannot add up to more than the whole (a crafted weight).
  EXPECT_NE(refusal(with([](auto& j) { j["regimes"][0]["time_ns"] = 5000; })).find("more than"), std::string::npos);
}

TEST(RegimesIndex, DirectoriesStayInsideOut) {
  for (const char* bad : {"../elsewhere", "a/b", "/abs", ".hidden", "", "a b", "..", "x\ny"})
    EXPECT_NE(refusal(with([&](auto& j) { j["regimes"][0]["dir"] = bad; })).find("dir"), std::string::npos) << bad;
}

TEST(RegimesIndex, ALinkedIndexIsRefused) {
  const fs::path dir = fs::temp_directory_path() / "kerncap-regimes-link-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "real.json") << to_json(sample()).dump();
  fs::create_symlink(dir / "real.json", dir / "regimes.json");
  EXPECT_TRUE(has_regimes(dir));
  EXPECT_THROW(read_regimes(dir), kerncap::Error);
  fs::remove_all(dir);
}
