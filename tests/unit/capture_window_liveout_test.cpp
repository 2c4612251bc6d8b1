// The live-out observation after a window (capture/window_liveout.hpp), driven directly: a
// pointer in a later launch's parameters reads a region, a copy from it reads it, an overwrite
// of every byte the window changed kills it (a partial one does not), nothing within the
// horizon leaves it dead, and regions that cannot be observed are always live.
#include <gtest/gtest.h>

#include <cstring>

#include "capture/window_liveout.hpp"

using namespace kerncap::capture;

namespace {

std::vector<uint8_t> liveout_words(std::initializer_list<uint64_t> words) {
  std::vector<uint8_t> out(words.size() * 8);
  size_t i = 0;
  for (uint64_t w : words) std::memcpy(out.data() + 8 * i++, &w, 8);
  return out;
}

// Regions: 1 [0x1000, 0x2000) changed whole; 2 [0x4000, 0x5000) changed [0x100, 0x200);
// 3 a module global (not observable).
std::vector<WindowChanged> liveout_regions() {
  WindowChanged g{3, 0x9000, 0x10, 0, 0x10};
  g.observable = false;
  g.evidence = "a module global: always live";
  return {{1, 0x1000, 0x1000, 0, 0x1000}, {2, 0x4000, 0x1000, 0x100, 0x200}, g};
}

}  // namespace

TEST(CaptureWindowLiveOut, PointersInParametersRead) {
  LiveOutObserver o(liveout_regions(), 10);
  // A pointer to the last byte of region 1, at an aligned word; a word past region 2's end.
  EXPECT_FALSE(o.on_launch("_Z7consumePf", 42, liveout_words({7, 0x1fff, 0x5000})));
  const auto r = o.result("horizon");
  EXPECT_TRUE(r.find(1)->read);
  EXPECT_NE(r.find(1)->evidence.find("consume(float*)"), std::string::npos) << r.find(1)->evidence;
  EXPECT_NE(r.find(1)->evidence.find("offset 8"), std::string::npos);
  EXPECT_FALSE(r.find(2)->read);
  EXPECT_NE(r.find(2)->evidence.find("not reached by the 1 launch"), std::string::npos) << r.find(2)->evidence;
  EXPECT_TRUE(r.find(3)->read);  // not observable: always live
  EXPECT_EQ(r.find(3)->evidence, "a module global: always live");
}

TEST(CaptureWindowLiveOut, OverwritesKillOnlyWhenTheyCoverTheChangedBytes) {
  LiveOutObserver o(liveout_regions(), 10);
  o.on_write(0x1000, 0x800, "a memset");   // half of region 1: not dead
  o.on_write(0x4100, 0x100, "a memset");   // exactly region 2's changed bytes: dead
  o.on_launch("k", 1, liveout_words({0x4100, 0x1800}));  // too late for 2; reads 1
  const auto r = o.result("application ended");
  EXPECT_TRUE(r.find(1)->read);
  EXPECT_FALSE(r.find(2)->read);
  EXPECT_NE(r.find(2)->evidence.find("overwritten by a memset"), std::string::npos);
}

TEST(CaptureWindowLiveOut, CopiesReadTheirSourceFirst) {
  LiveOutObserver o(liveout_regions(), 10);
  o.on_read(0x4000, 0x1000, "a device-to-host copy");
  o.on_read(0x1000, 4, "a copy");
  o.on_write(0x1000, 0x1000, "a copy");  // already read: stays live
  const auto r = o.result("application ended");
  EXPECT_TRUE(r.find(1)->read);
  EXPECT_TRUE(r.find(2)->read);
  EXPECT_NE(r.find(2)->evidence.find("device-to-host"), std::string::npos);
  EXPECT_NE(r.find(2)->evidence.find("0 launch(es)"), std::string::npos);
}

TEST(CaptureWindowLiveOut, TheHorizonEndsTheObservation) {
  LiveOutObserver o(liveout_regions(), 2);
  EXPECT_FALSE(o.on_launch("a", 1, {}));
  EXPECT_TRUE(o.on_launch("b", 2, {}));
  EXPECT_TRUE(o.over());
  EXPECT_TRUE(o.on_launch("c", 3, liveout_words({0x1000})));  // after the horizon: not seen
  o.on_read(0x4000, 16, "a copy");
  const auto r = o.result("horizon");
  EXPECT_EQ(r.launches_observed, 2u);
  EXPECT_EQ(r.horizon, 2u);
  EXPECT_FALSE(r.find(1)->read);
  EXPECT_FALSE(r.find(2)->read);
  EXPECT_EQ(r.live(), std::set<uint32_t>{3});
}

TEST(CaptureWindowLiveOut, AGraphLaunchMayReadEverythingUndecided) {
  LiveOutObserver o(liveout_regions(), 10);
  o.on_write(0x4100, 0x100, "a memset");  // region 2 dead first
  o.on_opaque("a CUDA graph launch");
  const auto r = o.result("horizon");
  EXPECT_TRUE(r.find(1)->read);
  EXPECT_NE(r.find(1)->evidence.find("possibly read by a CUDA graph launch"), std::string::npos);
  EXPECT_FALSE(r.find(2)->read);
}

// Where each region was reached is kept (region-relative), until the window's bytes are
// overwritten after a read; a graph launch leaves the reads incomplete (the whole region counts).
TEST(CaptureWindowLiveOut, KeepsWhereEachRegionWasReached) {
  LiveOutObserver o(liveout_regions(), 10);
  o.on_launch("_Z1kPf", 1, liveout_words({0x1100, 0x1100, 0x4180}));
  o.on_read(0x1f00, 0x200, "a copy to the host");
  o.on_write(0x4000, 0x1000, "a memset");  // covers region 2's changed bytes, after its read: closed
  o.on_launch("_Z1kPf", 2, liveout_words({0x4100}));
  auto r = o.result("horizon");
  EXPECT_EQ(r.find(1)->reads, (std::vector<std::pair<uint64_t, uint64_t>>{{0x100, 1}, {0xf00, 0x100}}));
  EXPECT_TRUE(r.find(1)->reads_complete);
  EXPECT_EQ(r.find(2)->reads, (std::vector<std::pair<uint64_t, uint64_t>>{{0x180, 1}}));
  EXPECT_FALSE(r.find(3)->reads_complete);  // not observable
  o.on_opaque("a CUDA graph launch");
  r = o.result("horizon");
  EXPECT_FALSE(r.find(1)->reads_complete);
  EXPECT_TRUE(r.find(1)->reads.empty());
}
