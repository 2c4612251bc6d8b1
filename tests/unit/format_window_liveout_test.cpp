// window_liveout.json, the observation behind `--live-out auto`: what the library writes reads
// back the same, a capture without it reads as absent, and the strict reader refuses what the
// writer never writes (untrusted input).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "format/window_liveout.hpp"

using namespace kerncap::format;

namespace {

WindowLiveOut liveout_sample() {
  WindowLiveOut w;
  w.horizon = 256;
  w.launches_observed = 3;
  w.ended = "application ended";
  w.regions = {{1, false, "not reached before the application ended"}, {4, true, "reached by launch 9 of consume"}};
  return w;
}

void expect_refused(nlohmann::json j, const std::string& what) {
  try {
    window_liveout_from_json(j);
    FAIL() << "accepted: " << j.dump();
  } catch (const kerncap::Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(FormatWindowLiveOut, RoundTripAndLiveSet) {
  const WindowLiveOut w = window_liveout_from_json(to_json(liveout_sample()));
  EXPECT_EQ(w.horizon, 256u);
  EXPECT_EQ(w.launches_observed, 3u);
  EXPECT_EQ(w.ended, "application ended");
  ASSERT_EQ(w.regions.size(), 2u);
  EXPECT_EQ(w.live(), std::set<uint32_t>{4});
  ASSERT_NE(w.find(1), nullptr);
  EXPECT_FALSE(w.find(1)->read);
  EXPECT_EQ(w.find(2), nullptr);
}

TEST(FormatWindowLiveOut, StrictReader) {
  const nlohmann::json good = to_json(liveout_sample());
  auto with = [&](const std::function<void(nlohmann::json&)>& f) {
    nlohmann::json j = good;
    f(j);
    return j;
  };
  expect_refused(with([](auto& j) { j["format"] = "kerncap-window"; }), "format");
  expect_refused(with([](auto& j) { j["version"] = 2; }), "newer kerncap");
  expect_refused(with([](auto& j) { j["ended"] = "whenever"; }), "ended");
  expect_refused(with([](auto& j) { j["regions"][0]["read"] = 1; }), "read");
  expect_refused(with([](auto& j) { j["regions"][1]["id"] = 1; }), "twice");
  expect_refused(with([](auto& j) { j["regions"][0]["evidence"] = std::string(5000, 'x'); }), "evidence");
  expect_refused(with([](auto& j) { j.erase("horizon"); }), "horizon");
}

TEST(FormatWindowLiveOut, AbsentOrReadFromADirectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("kc_liveout_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(read_window_liveout(dir).has_value());
  std::ofstream(dir / kWindowLiveOutFile) << to_json(liveout_sample()).dump();
  const auto w = read_window_liveout(dir);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->regions.size(), 2u);
  std::ofstream(dir / kWindowLiveOutFile) << "{\"format\": 3}";
  EXPECT_THROW(read_window_liveout(dir), kerncap::Error);
  std::filesystem::remove_all(dir);
}
