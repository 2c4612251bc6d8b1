// Several targets in one run (Config::targets), driven by fake CUPTI callbacks: each target
// counts its own matching launches and takes its own dispatch, claims its own directory,
// its events name it, only the last capture stops the application, and a launch two
// patterns name is captured once. No GPU.
#include <gtest/gtest.h>

#include "capture/events.hpp"
#include "capture/in_app.hpp"
#include "capture/watcher.hpp"
#include "capture_fakes.hpp"

using namespace kerncap::capture;
using namespace kerncap::capture::testing;
using kerncap::format::MatchKind;
using kerncap::format::TargetSpec;

namespace {

constexpr const char* kScale = "_Z5scalePfi";   // scale(float*, int)
constexpr const char* kAdd = "_Z3addPfS_i";     // add(float*, float*, int)
constexpr const char* kAddN = "_Z4addnPfS_i";   // addn(float*, float*, int)
constexpr const char* kOther = "_Z5otherv";     // other()

struct Multi {
  TempDir dir;
  Config config;
  std::unique_ptr<Inventory> inventory;
  FakeQueries driver;
  FakeTarget target;
  std::unique_ptr<LaunchWatcher> watcher;
  uint32_t next_correlation = 1;

  explicit Multi(std::vector<TargetSpec> targets, bool keep_running = false) : dir("multi") {
    config.mode = Mode::Capture;
    config.output = dir.path().string();
    config.keep_running = keep_running;
    for (size_t i = 0; i < targets.size(); ++i) {
      targets[i].output = (dir.path() / ("t" + std::to_string(i))).string();
      std::filesystem::create_directories(std::filesystem::path(targets[i].output) / ".kerncap");
    }
    config.targets = std::move(targets);
    events_open(config.output);
    inventory = std::make_unique<Inventory>(config);
    watcher = std::make_unique<LaunchWatcher>(config, *inventory, driver, target);
  }
  void launch(const char* symbol) {
    FakeLaunch l(symbol, next_correlation++);
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  }
  std::vector<nlohmann::json> events(const std::string& kind) const { return events_of(config.output, kind); }
};

}  // namespace

TEST(CaptureMultiTarget, EachTargetCountsItsOwnLaunchesAndDispatch) {
  Multi m({{"scale", MatchKind::Substring, 1, ""}, {"add", MatchKind::Substring, 0, ""}});
  m.launch(kScale);  // scale match 0
  m.launch(kAdd);    // add match 0: target 1 (launch 1)
  m.launch(kOther);
  EXPECT_FALSE(m.watcher->done());
  m.launch(kScale);  // scale match 1: target 0 (launch 3), the last one
  ASSERT_EQ(m.target.begun.size(), 2u);
  EXPECT_EQ(m.target.begun[0].target, 1);
  EXPECT_EQ(m.target.begun[0].mangled, kAdd);
  EXPECT_EQ(m.target.begun[0].launch_index, 1u);
  EXPECT_FALSE(m.target.begun[0].stop_after);  // scale still waits: the application goes on
  EXPECT_EQ(m.target.begun[1].target, 0);
  EXPECT_EQ(m.target.begun[1].launch_index, 3u);
  EXPECT_TRUE(m.target.begun[1].stop_after);  // the last target stops it (no --continue)
  EXPECT_EQ(m.target.finished.size(), 2u);    // each AFTER at its own exit
  EXPECT_TRUE(m.watcher->done());
  // Each target claimed its own directory.
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(m.config.targets[0].output) / ".kerncap" / "claim"));
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(m.config.targets[1].output) / ".kerncap" / "claim"));
  m.launch(kScale);
  EXPECT_EQ(m.target.begun.size(), 2u);
}

TEST(CaptureMultiTarget, EventsNameTheirTargets) {
  Multi m({{"scale", MatchKind::Substring, 0, ""}, {"add", MatchKind::Substring, 0, ""}});
  m.launch(kAdd);
  auto seen = m.events("seen");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0]["targets"], nlohmann::json::array({1}));
  auto match = m.events("match");
  ASSERT_EQ(match.size(), 1u);
  EXPECT_EQ(match[0]["target"], 1);
  m.launch(kOther);
  EXPECT_EQ(m.events("seen").back()["targets"], nlohmann::json::array());
}

TEST(CaptureMultiTarget, ExactMatchNamesOnlyThatKernel) {
  Multi m({{kAdd, MatchKind::Exact, 0, ""}, {"scale", MatchKind::Substring, 5, ""}});
  m.launch(kAddN);  // "add" is in its name, but it is not the name
  EXPECT_TRUE(m.target.begun.empty());
  m.launch(kAdd);
  ASSERT_EQ(m.target.begun.size(), 1u);
  EXPECT_EQ(m.target.begun[0].mangled, kAdd);
}

TEST(CaptureMultiTarget, ContinueNeverStops) {
  Multi m({{"scale", MatchKind::Substring, 0, ""}, {"add", MatchKind::Substring, 0, ""}}, true);
  m.launch(kScale);
  m.launch(kAdd);
  ASSERT_EQ(m.target.begun.size(), 2u);
  EXPECT_FALSE(m.target.begun[0].stop_after);
  EXPECT_FALSE(m.target.begun[1].stop_after);
}

TEST(CaptureMultiTarget, OneLaunchNamedByTwoTargetsIsCapturedOnce) {
  Multi m({{"add", MatchKind::Substring, 0, ""}, {"addn", MatchKind::Substring, 0, ""}});
  m.launch(kAddN);  // both patterns name it, both at dispatch 0
  ASSERT_EQ(m.target.begun.size(), 1u);
  EXPECT_EQ(m.target.begun[0].target, 0);
  auto errors = m.events("error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["target"], 1);
  EXPECT_NE(errors[0]["what"].get<std::string>().find("also target 0's"), std::string::npos);
  EXPECT_TRUE(m.watcher->done());
}

TEST(CaptureMultiTarget, AClaimedTargetIsLeftToItsOwner) {
  Multi m({{"scale", MatchKind::Substring, 0, ""}, {"add", MatchKind::Substring, 0, ""}});
  // Another process of the application took target 0 first.
  std::ofstream(std::filesystem::path(m.config.targets[0].output) / ".kerncap" / "claim") << "1";
  m.launch(kScale);
  EXPECT_TRUE(m.target.begun.empty());
  m.launch(kAdd);
  ASSERT_EQ(m.target.begun.size(), 1u);
  EXPECT_EQ(m.target.begun[0].target, 1);
  EXPECT_TRUE(m.target.begun[0].stop_after);
}

TEST(CaptureMultiTarget, EachCaptureGetsItsTargetsConfiguration) {
  Config run;
  run.mode = Mode::Capture;
  run.output = "/out";
  run.keep_running = true;
  run.targets = {{"scale", MatchKind::Regex, 3, "/out/00-scale"}, {"add", MatchKind::Exact, 0, "/out/01-add"}};
  const Config c = kerncap::format::config_for_target(run, 0);
  EXPECT_EQ(c.output, "/out/00-scale");
  EXPECT_EQ(c.kernel, "scale");
  EXPECT_TRUE(c.regex);
  EXPECT_EQ(c.dispatch, 3u);
  EXPECT_EQ(c.target_index, 0);
  EXPECT_TRUE(c.targets.empty());
  EXPECT_EQ(c.to_json()["target"], 0);
  EXPECT_EQ(c.to_json()["match"], "regex");
  EXPECT_EQ(kerncap::format::config_for_target(run, -1).output, "/out");  // one target: the run's own
}

TEST(CaptureMultiTarget, TheManifestConfigSaysHowTheTargetWasMatched) {
  Config run;
  run.mode = Mode::Capture;
  run.output = "/out";
  run.targets = {{"_Z3addPf", MatchKind::Exact, 0, "/out/00-add"}, {"scale", MatchKind::Substring, 0, "/out/01-scale"}};
  // An --top target is an exact mangled name: "regex": false alone would read as a substring.
  const nlohmann::json exact = kerncap::format::config_for_target(run, 0).to_json();
  EXPECT_EQ(exact["match"], "exact");
  EXPECT_EQ(exact["regex"], false);
  EXPECT_EQ(exact["kernel"], "_Z3addPf");
  EXPECT_EQ(kerncap::format::config_for_target(run, 1).to_json()["match"], "substring");
  // One target from the environment (KERNCAP_KERNEL / KERNCAP_REGEX): never exact.
  Config one;
  one.kernel = "k";
  EXPECT_EQ(one.to_json()["match"], "substring");
  one.regex = true;
  EXPECT_EQ(one.to_json()["match"], "regex");
}

namespace {
int g_windows = 0;
void count_window() { ++g_windows; }
}  // namespace

TEST(CaptureMultiTarget, InAppRecordsStartAtTheEarliestWindow) {
  // scale waits far (its window opens at its match 50), add near (its first match).
  Multi m({{"scale", MatchKind::Substring, kInAppLead + 50, ""}, {"add", MatchKind::Substring, 3, ""}});
  g_windows = 0;
  m.watcher->on_in_app_window(&count_window);
  for (int i = 0; i < 50; ++i) m.launch(kScale);
  EXPECT_EQ(g_windows, 0);
  m.launch(kAdd);  // add's match 0: its window is from the start
  EXPECT_EQ(g_windows, 1);
  for (int i = 0; i < 10; ++i) m.launch(kScale);  // scale's window too: already open
  EXPECT_EQ(g_windows, 1);

  Multi far({{"scale", MatchKind::Substring, kInAppLead + 50, ""}, {"add", MatchKind::Substring, kInAppLead + 10, ""}});
  g_windows = 0;
  far.watcher->on_in_app_window(&count_window);
  for (int i = 0; i < 10; ++i) far.launch(kAdd);  // add's matches 0..9
  for (int i = 0; i < 50; ++i) far.launch(kScale);  // scale's 0..49
  EXPECT_EQ(g_windows, 0);
  far.launch(kAdd);  // add's match 10 = its window
  EXPECT_EQ(g_windows, 1);
}
