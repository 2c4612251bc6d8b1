// Peer memory at the target launch, with no GPU: which parameters point into regions of
// another device, and the capture log's line about them.
#include <gtest/gtest.h>

#include <cstring>

#include "capture/peer_scan.hpp"

using namespace kerncap;
using namespace kerncap::capture;

namespace {

std::vector<uint8_t> params_of(std::initializer_list<uint64_t> words) {
  std::vector<uint8_t> b(words.size() * 8);
  size_t i = 0;
  for (uint64_t w : words) std::memcpy(b.data() + 8 * i++, &w, 8);
  return b;
}

const std::vector<format::Region> kRegions{
    {0, format::MemKind::Device, 0x7f0000000000ull, 4096, "mem/0.bin", 0, "", 0},      // the launch's device
    {1, format::MemKind::Device, 0x7f1000000000ull, 1 << 20, "mem/1.bin", 0, "", 1},   // device 1: peer
    {2, format::MemKind::Managed, 0x7f2000000000ull, 4096, "mem/2.bin", 0, ""}};       // no device

}  // namespace

TEST(CapturePeerScan, ParametersPointingIntoPeerRegionsAreFound) {
  const auto params = params_of({0x7f0000000010ull, 0x7f1000000400ull, 1024});
  const std::vector<format::ParamSlot> slots{{0, 8}, {8, 8}, {16, 4}};
  const auto refs = peer_references(params, slots, kRegions, 0);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].param, 1u);
  EXPECT_EQ(refs[0].region, 1u);
  EXPECT_EQ(refs[0].device, 1);
  EXPECT_EQ(peer_summary(kRegions, 0, refs),
            "1 region(s) (1.0 MiB) belong to other GPU(s) (device 1) than the launch's (device 0); parameter(s) 1 "
            "point into them: the kernel reads peer memory");
}

TEST(CapturePeerScan, PeerRegionsWithoutDirectPointersAreStillNamed) {
  const auto params = params_of({0x7f0000000010ull});
  const auto refs = peer_references(params, {{0, 8}}, kRegions, 0);
  EXPECT_TRUE(refs.empty());
  EXPECT_NE(peer_summary(kRegions, 0, refs).find("no parameter points into them directly"), std::string::npos);
}

TEST(CapturePeerScan, OneDeviceSaysNothing) {
  std::vector<format::Region> own(kRegions.begin(), kRegions.begin() + 1);
  EXPECT_EQ(peer_summary(own, 0, {}), "");
  // Seen from device 1, region 0 is the peer one.
  EXPECT_NE(peer_summary(kRegions, 1, {}).find("(device 0) than the launch's (device 1)"), std::string::npos);
}

TEST(CapturePeerScan, SlotsShorterThanAWordOrPastTheBufferAreSkipped) {
  const auto params = params_of({0x7f1000000400ull});
  EXPECT_TRUE(peer_references(params, {{0, 4}}, kRegions, 0).empty());
  EXPECT_TRUE(peer_references(params, {{8, 8}}, kRegions, 0).empty());
}
