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
  expect_refused(with([](auto& j) { j["version"] = 3; }), "newer kerncap");
  expect_refused(with([](auto& j) { j["regions"][1]["reads"] = {{1, 2, 3}}; }), "[offset, size]");
  expect_refused(with([](auto& j) { j["regions"][1]["reads"] = {{1, 0}}; }), "reads");
  expect_refused(with([](auto& j) { j["regions"][1].erase("reads_complete"); }), "reads_complete");
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

// Version 2 keeps where each region was reached; a version 1 file reads with no reads listed
// (reads_complete false: the region is decided as a whole).
TEST(FormatWindowLiveOut, ReadsRoundTripAndVersionOneHasNone) {
  WindowLiveOut w = liveout_sample();
  w.regions[1].reads = {{0x100, 1}, {0x2000, 64}};
  w.regions[1].reads_complete = true;
  const WindowLiveOut back = window_liveout_from_json(to_json(w));
  EXPECT_EQ(back.find(4)->reads, w.regions[1].reads);
  EXPECT_TRUE(back.find(4)->reads_complete);
  nlohmann::json v1 = to_json(w);
  v1["version"] = 1;
  for (auto& r : v1["regions"]) {
    r.erase("reads");
    r.erase("reads_complete");
  }
  const WindowLiveOut old = window_liveout_from_json(v1);
  EXPECT_TRUE(old.find(4)->reads.empty());
  EXPECT_FALSE(old.find(4)->reads_complete);
}
