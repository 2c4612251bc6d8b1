#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "replay/relocation.hpp"

using namespace kerncap::replay;

TEST(ReplayRelocation, TranslatesOnlyMovedSpans) {
  RelocationMap m;
  m.add({0x1000, 0x2000, 0x9000, false});
  m.add({0x5000, 0x5100, 0x5000, false});  // did not move: ignored
  m.add({0x7000, 0x7100, 0xa000, true});
  EXPECT_EQ(m.moves().size(), 2u);
  EXPECT_EQ(m.translate(0x1000), 0x9000u);
  EXPECT_EQ(m.translate(0x1fff), 0x9fffu);
  EXPECT_EQ(m.translate(0x2000), 0x2000u);  // end is exclusive
  EXPECT_EQ(m.translate(0x0fff), 0x0fffu);
  EXPECT_EQ(m.translate(0x7080), 0xa080u);
  EXPECT_EQ(m.translate(0x6000), 0x6000u);
}

TEST(ReplayRelocation, RewritesAlignedPointerWordsAndCountsThem) {
  RelocationMap m;
  m.add({0x7f0000000000, 0x7f0000100000, 0x7e0000000000, false});
  std::vector<uint64_t> words = {0x7f0000000010, 42, 0x7f00000fffff, 0x7f0000100000, 0};
  std::vector<uint8_t> bytes(words.size() * 8);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  EXPECT_EQ(m.rewrite(bytes.data(), bytes.size(), 0x1000), 2u);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  EXPECT_EQ(words[0], 0x7e0000000010u);
  EXPECT_EQ(words[1], 42u);
  EXPECT_EQ(words[2], 0x7e00000fffffu);
  EXPECT_EQ(words[3], 0x7f0000100000u);  // one past the end: not a pointer into the span
}

TEST(ReplayRelocation, WordsAreTakenAtAlignedDeviceAddresses) {
  RelocationMap m;
  m.add({0x1000, 0x2000, 0x8000, false});
  // Data that starts 4 bytes past an 8-byte boundary: the first aligned word is at +4.
  std::vector<uint8_t> bytes(20, 0);
  uint64_t p = 0x1800;
  std::memcpy(bytes.data() + 4, &p, 8);
  EXPECT_EQ(m.rewrite(bytes.data(), bytes.size(), 0x104), 1u);
  std::memcpy(&p, bytes.data() + 4, 8);
  EXPECT_EQ(p, 0x8800u);
  RelocationMap empty;
  EXPECT_EQ(empty.rewrite(bytes.data(), bytes.size(), 0), 0u);
}
