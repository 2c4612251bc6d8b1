#include <gtest/gtest.h>

#include "capture/ranges.hpp"

using kerncap::capture::RangeSet;

TEST(CaptureRanges, AddFindErase) {
  RangeSet s;
  s.add(0x1000, 0x100, 1);
  s.add(0x3000, 0x200, 2);
  ASSERT_EQ(s.count(), 2u);
  EXPECT_EQ(s.find(0x10ff)->base, 0x1000u);
  EXPECT_FALSE(s.find(0x1100).has_value());
  EXPECT_EQ(s.find(0x3000)->kind, 2);
  EXPECT_EQ(s.total_bytes(), 0x300u);
  auto r = s.erase_at(0x1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->size, 0x100u);
  EXPECT_FALSE(s.erase_at(0x1000).has_value());  // already freed
  EXPECT_FALSE(s.erase_at(0x3001).has_value());  // not a base
  EXPECT_EQ(s.count(), 1u);
}

TEST(CaptureRanges, UnmapSplitsAndTrims) {
  RangeSet s;
  s.add(0x0, 0x10000, 6);
  s.erase_span(0x4000, 0x2000);  // hole in the middle
  auto all = s.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].base, 0x0u);
  EXPECT_EQ(all[0].size, 0x4000u);
  EXPECT_EQ(all[1].base, 0x6000u);
  EXPECT_EQ(all[1].size, 0xa000u);
  s.erase_span(0x0, 0x1000);  // trim the front
  EXPECT_EQ(s.all()[0].base, 0x1000u);
  s.erase_span(0xf000, 0x5000);  // trim the back, past the end
  EXPECT_EQ(s.all()[1].end(), 0xf000u);
  s.erase_span(0x0, 0x100000);  // everything
  EXPECT_EQ(s.count(), 0u);
}

TEST(CaptureRanges, NewAllocationReplacesStaleOverlap) {
  RangeSet s;
  s.add(0x1000, 0x1000, 1);
  s.add(0x1800, 0x1000, 2);  // a free we never saw: the new range wins
  auto all = s.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].base, 0x1000u);
  EXPECT_EQ(all[0].size, 0x800u);
  EXPECT_EQ(all[1].base, 0x1800u);
  EXPECT_EQ(all[1].kind, 2);
  s.add(0x5000, 0, 1);  // empty allocations are ignored
  EXPECT_EQ(s.count(), 2u);
}

TEST(CaptureRanges, CoalesceMergesTouchingRangesOfOneKindOnly) {
  using kerncap::capture::coalesce;
  using kerncap::capture::TrackedRange;
  const int vmm = 7, device = 1;
  // Expandable segments: three VMM pieces mapped back to back, then a gap, then one more.
  std::vector<TrackedRange> in = {{0x1000, 0x1000, vmm},   {0x2000, 0x1000, vmm}, {0x3000, 0x800, vmm},
                                  {0x4000, 0x1000, vmm},   // not touching (gap at 0x3800)
                                  {0x5000, 0x1000, device}, {0x6000, 0x1000, device}};
  auto out = coalesce(in, vmm);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].base, 0x1000u);
  EXPECT_EQ(out[0].size, 0x2800u);
  EXPECT_EQ(out[1].base, 0x4000u);
  // Other kinds stay separate even when they touch (two allocations are two regions).
  EXPECT_EQ(out[2].base, 0x5000u);
  EXPECT_EQ(out[3].base, 0x6000u);
  // A device range followed by a touching VMM range is not merged either.
  auto mixed = coalesce({{0x1000, 0x1000, device}, {0x2000, 0x1000, vmm}}, vmm);
  EXPECT_EQ(mixed.size(), 2u);
  EXPECT_TRUE(coalesce({}, vmm).empty());
}

TEST(CaptureRanges, OverlapsAnyFindsSharedBytesOnly) {
  // Module globals taken so far; an alias of one (same bytes) must be found, a neighbour not.
  const std::map<uint64_t, uint64_t> spans = {{0x1000, 0x1100}, {0x2000, 0x2400}};
  EXPECT_TRUE(kerncap::capture::overlaps_any(spans, 0x1000, 0x1100));   // the same bytes
  EXPECT_TRUE(kerncap::capture::overlaps_any(spans, 0x10f0, 0x1200));   // a tail
  EXPECT_TRUE(kerncap::capture::overlaps_any(spans, 0x1f00, 0x3000));   // covers a span
  EXPECT_FALSE(kerncap::capture::overlaps_any(spans, 0x1100, 0x2000));  // between, touching both
  EXPECT_FALSE(kerncap::capture::overlaps_any(spans, 0x0, 0x1000));
  EXPECT_FALSE(kerncap::capture::overlaps_any({}, 0x0, 0x1000));
}
