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

TEST(RegimesIndex, ScalarParamsRoundTripAndAreOptional) {
  RegimesIndex r = sample();
  r.regimes[0].params = {{2, 0, 4, 4194304, true}, {3, 0, 4, 0x3f000000, false}, {5, 8, 8, 0xfffffffffffffff0, true}};
  EXPECT_EQ(regimes_from_json(to_json(r).dump(), "x"), r);
  EXPECT_FALSE(to_json(r)["regimes"][1].contains("params"));  // none recorded: no field
  EXPECT_EQ(varying_params_text(r.regimes[0].params), "param 2 = 4194304, param 5+8 = -16");
  // An index of a kerncap before parameter signatures (no "params") reads as before.
  nlohmann::json old = to_json(sample());
  EXPECT_EQ(regimes_from_json(old.dump(), "x"), sample());
}

TEST(RegimesIndex, RefusesBadScalarParams) {
  auto with_params = [](const nlohmann::json& params) {
    return with([&](auto& j) { j["regimes"][0]["params"] = params; });
  };
  const nlohmann::json word = {{"slot", 2}, {"offset", 0}, {"size", 4}, {"value", 4096}, {"varies", true}};
  EXPECT_EQ(refusal(with_params(nlohmann::json::array({word}))), "");
  auto changed = [&](const char* key, const nlohmann::json& v) {
    nlohmann::json w = word;
    w[key] = v;
    return with_params(nlohmann::json::array({w}));
  };
  EXPECT_NE(refusal(changed("size", 9)).find("size"), std::string::npos);
  EXPECT_NE(refusal(changed("size", 0)).find("size"), std::string::npos);
  EXPECT_NE(refusal(changed("value", uint64_t{1} << 32)).find("does not fit in 4 bytes"), std::string::npos);
  EXPECT_NE(refusal(changed("value", -1)).find("value"), std::string::npos);
  EXPECT_NE(refusal(changed("slot", 40000)).find("slot"), std::string::npos);
  EXPECT_NE(refusal(changed("varies", 1)).find("varies"), std::string::npos);
  EXPECT_NE(refusal(changed("value", "4096")).find("value"), std::string::npos);
  nlohmann::json missing = word;
  missing.erase("varies");
  EXPECT_NE(refusal(with_params(nlohmann::json::array({missing}))).find("varies"), std::string::npos);
  EXPECT_NE(refusal(with_params(nlohmann::json::array({word, word}))).find("buffer order"), std::string::npos);
  EXPECT_NE(refusal(with_params(word)), "");                                              // not a list
  EXPECT_NE(refusal(with_params(nullptr)), "");
  nlohmann::json many = nlohmann::json::array();
  for (uint32_t i = 0; i < 65; ++i) many.push_back({{"slot", i}, {"offset", 0}, {"size", 4}, {"value", 1}, {"varies", false}});
  EXPECT_NE(refusal(with_params(many)), "");
}
