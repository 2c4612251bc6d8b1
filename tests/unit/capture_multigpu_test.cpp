// Multi-process and multi-device jobs inside the library, with no GPU: which process takes
// part for `extract --rank` (rank_gate) and which launches count for `--device` (watcher).
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "capture/events.hpp"
#include "capture/rank_gate.hpp"
#include "capture/watcher.hpp"
#include "capture_fakes.hpp"

using namespace kerncap::capture;
using namespace kerncap::capture::testing;

namespace {

constexpr const char* kScale = "_Z5scalePfi";

// A driver whose contexts belong to devices.
struct DeviceQueries : FakeQueries {
  std::map<CUcontext, int> devices;
  int device_of(CUcontext ctx) override {
    auto it = devices.find(ctx);
    return it == devices.end() ? -1 : it->second;
  }
};

const CUcontext kCtx0 = reinterpret_cast<CUcontext>(0x100);
const CUcontext kCtx1 = reinterpret_cast<CUcontext>(0x200);

struct Harness {
  TempDir dir{"multigpu"};
  Config config;
  std::unique_ptr<Inventory> inventory;
  DeviceQueries driver;
  FakeTarget target;
  std::unique_ptr<LaunchWatcher> watcher;
  uint32_t next_correlation = 1;

  explicit Harness(int device, uint64_t dispatch = 0) {
    config.mode = Mode::Capture;
    config.output = dir.path().string();
    config.kernel = "scale";
    config.dispatch = dispatch;
    config.device = device;
    driver.devices = {{kCtx0, 0}, {kCtx1, 1}};
    events_open(config.output);
    inventory = std::make_unique<Inventory>(config);
    watcher = std::make_unique<LaunchWatcher>(config, *inventory, driver, target);
  }
  void launch(CUcontext ctx) {
    FakeLaunch l(kScale, next_correlation++);
    l.cb.context = ctx;
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  }
};

Config with_rank(int64_t rank) {
  Config c;
  c.mode = Mode::Capture;
  c.rank = rank;
  return c;
}

}  // namespace

TEST(CaptureMultiGpu, OnlyLaunchesOnTheChosenDeviceCount) {
  Harness h(1, /*dispatch=*/1);
  h.launch(kCtx0);  // launch 0: device 0, not counted
  h.launch(kCtx1);  // launch 1: match 0
  h.launch(kCtx0);  // launch 2: not counted
  h.launch(kCtx1);  // launch 3: match 1, the target
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].launch_index, 3u);
  auto ignored = events_of(h.dir.path(), "ignored");
  ASSERT_EQ(ignored.size(), 1u);  // once per name
  EXPECT_EQ(ignored[0]["why"], "on CUDA device 0, not --device 1");
}

TEST(CaptureMultiGpu, WithoutADeviceEveryDeviceCounts) {
  Harness h(-1, 1);
  h.launch(kCtx0);
  h.launch(kCtx1);
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].launch_index, 1u);
  EXPECT_TRUE(events_of(h.dir.path(), "ignored").empty());
}

TEST(CaptureMultiGpu, AContextOfUnknownDeviceIsNotTheChosenOne) {
  Harness h(0);
  h.launch(reinterpret_cast<CUcontext>(0x999));
  EXPECT_TRUE(h.target.begun.empty());
  h.launch(kCtx0);
  EXPECT_EQ(h.target.begun.size(), 1u);
}

TEST(CaptureMultiGpu, TheLaunchersRankDecidesAndNoSlotIsTaken) {
  bool slot_taken = false;
  auto slot = [&] {
    slot_taken = true;
    return std::optional<uint64_t>(0);
  };
  RankDecision d = decide_rank(with_rank(1), {1, "RANK"}, slot);
  EXPECT_TRUE(d.selected);
  EXPECT_EQ(d.rank, 1);
  EXPECT_EQ(d.source, "RANK");
  d = decide_rank(with_rank(1), {0, "LOCAL_RANK"}, slot);
  EXPECT_FALSE(d.selected);
  EXPECT_EQ(d.rank, 0);
  EXPECT_FALSE(slot_taken);
}

TEST(CaptureMultiGpu, WithoutLauncherVariablesTheStartOrderDecides) {
  RankDecision d = decide_rank(with_rank(1), {}, [] { return std::optional<uint64_t>(1); });
  EXPECT_TRUE(d.selected);
  EXPECT_EQ(d.source, kerncap::format::kStartOrderSource);
  d = decide_rank(with_rank(1), {}, [] { return std::optional<uint64_t>(); });  // no slot: not selected
  EXPECT_FALSE(d.selected);
  EXPECT_EQ(d.rank, -1);
}

TEST(CaptureMultiGpu, WithoutRankEveryProcessTakesPart) {
  bool asked = false;
  RankDecision d = decide_rank(with_rank(-1), {3, "RANK"}, [&] {
    asked = true;
    return std::optional<uint64_t>(0);
  });
  EXPECT_TRUE(d.selected);
  EXPECT_FALSE(asked);
}
