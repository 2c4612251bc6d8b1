// The capture's closure: regions reachable from the parameters and module globals through
// pointer words, transitively; the rest may be omitted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "capture/closure.hpp"

namespace kerncap::capture {
namespace {

std::vector<uint8_t> words(std::initializer_list<uint64_t> ws) {
  std::vector<uint8_t> b(ws.size() * 8);
  size_t o = 0;
  for (uint64_t w : ws) {
    std::memcpy(b.data() + o, &w, 8);
    o += 8;
  }
  return b;
}

TEST(RangeIndex, FindsTheRegionAWordPointsInto) {
  const RangeIndex idx({{0x3000, 0x100}, {0x1000, 0x1000}, {0x2000, 0x10}});
  EXPECT_EQ(idx.find(0x1000), 1u);
  EXPECT_EQ(idx.find(0x1fff), 1u);
  EXPECT_EQ(idx.find(0x2000), 2u);
  EXPECT_FALSE(idx.find(0x2010).has_value());  // one past the end points nowhere
  EXPECT_FALSE(idx.find(0xfff).has_value());
  EXPECT_EQ(idx.find(0x30ff), 0u);
  EXPECT_FALSE(idx.find(0x3100).has_value());
  // Only aligned words count, each region once.
  auto b = words({0x1008, 7, 0x3000, 0x1010});
  EXPECT_EQ(idx.pointed(b), (std::vector<size_t>{1, 0}));
  std::vector<uint8_t> unaligned(12, 0);
  const uint64_t p = 0x3000;
  std::memcpy(unaligned.data() + 4, &p, 8);
  EXPECT_TRUE(idx.pointed(unaligned).empty());
}

TEST(Closure, TransitiveThroughRegionsAndGlobals) {
  // 0: params point here; it points to 1; 1 points to 2. 3: a global (root) pointing to 4.
  // 5: unreachable. 6: kept (cannot be omitted), pointing to 7, but not reached: 7 is omitted.
  const std::vector<ClosureRegion> regions = {{0x1000, 0x100}, {0x2000, 0x100}, {0x3000, 0x100},
                                              {0x4000, 0x10, true}, {0x5000, 0x100}, {0x6000, 0x100},
                                              {0x7000, 0x100, false, true}, {0x8000, 0x100}};
  const std::map<size_t, std::vector<size_t>> points = {{0, {1}}, {1, {2, 1}}, {3, {4}}, {6, {7}}};
  std::vector<size_t> scanned;
  auto pointers_in = [&](size_t i) {
    scanned.push_back(i);
    auto it = points.find(i);
    return it == points.end() ? std::vector<size_t>{} : it->second;
  };
  const auto params = words({42, 0x1040});
  const std::vector<bool> in = closure(regions, params, pointers_in);
  EXPECT_EQ(in, (std::vector<bool>{true, true, true, true, true, false, true, false}));
  std::sort(scanned.begin(), scanned.end());
  EXPECT_EQ(scanned, (std::vector<size_t>{0, 1, 2, 3, 4}));  // each reached region once, kept 6 never
}

TEST(Closure, NoPointersMeansOnlyRootsAndKept) {
  const std::vector<ClosureRegion> regions = {{0x1000, 0x100}, {0x2000, 0x100, true}};
  const std::vector<bool> in = closure(regions, words({0, 1, 2}), [](size_t) { return std::vector<size_t>{}; });
  EXPECT_EQ(in, (std::vector<bool>{false, true}));
}

}  // namespace
}  // namespace kerncap::capture
