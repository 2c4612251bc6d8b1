// The device fields of a capture (multi-GPU): the GPU's UUID and each region's device
// survive a round trip, captures written before them still read, bad values are refused.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "format/manifest.hpp"

namespace kerncap::format {
namespace {

Manifest two_device_manifest() {
  Manifest m;
  m.tool_version = "1.0";
  m.device_ordinal = 0;
  m.device_name = "NVIDIA H100 80GB HBM3";
  m.device_uuid = "GPU-6e3c2a7b-0d4e-4f55-9a1b-0123456789ab";
  m.cc_major = 9;
  m.mangled_name = "_Z4peerPKfPfi";
  m.params_size = 8;
  m.params = {{0, 8}};
  m.image_file = "image/00.cubin";
  m.regions = {{0, MemKind::Device, 0x7f0000000000ull, 4096, "mem/0.bin", 0, "", 0},
               {1, MemKind::Device, 0x7f1000000000ull, 4096, "mem/1.bin", 0, "", 1},
               {2, MemKind::Managed, 0x7f2000000000ull, 4096, "mem/2.bin", 0, ""}};
  return m;
}

}  // namespace

TEST(FormatManifestDevice, UuidAndRegionDevicesRoundTrip) {
  const Manifest m = two_device_manifest();
  const nlohmann::json j = to_json(m);
  EXPECT_EQ(j["device"]["uuid"], m.device_uuid);
  EXPECT_EQ(j["regions"][1]["device"], 1);
  EXPECT_FALSE(j["regions"][2].contains("device"));  // not recorded: not written
  const Manifest back = from_json(j);
  EXPECT_EQ(back.device_uuid, m.device_uuid);
  ASSERT_EQ(back.regions.size(), 3u);
  EXPECT_EQ(back.regions[0].device, 0);
  EXPECT_EQ(back.regions[1].device, 1);
  EXPECT_EQ(back.regions[2].device, -1);
  EXPECT_EQ(back.peer_regions(), 1u);
}

TEST(FormatManifestDevice, CapturesWithoutTheFieldsStillRead) {
  nlohmann::json j = to_json(two_device_manifest());
  j["device"].erase("uuid");
  for (auto& r : j["regions"]) r.erase("device");
  const Manifest back = from_json(j);
  EXPECT_EQ(back.device_uuid, "");
  for (const auto& r : back.regions) EXPECT_EQ(r.device, -1);
  EXPECT_EQ(back.peer_regions(), 0u);
}

TEST(FormatManifestDevice, BadDeviceValuesAreRefusedByName) {
  auto refused = [](nlohmann::json j, const std::string& what) {
    try {
      from_json(j);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = to_json(two_device_manifest());
  j["regions"][1]["device"] = -2;
  refused(j, "regions[1].device");
  j = to_json(two_device_manifest());
  j["regions"][1]["device"] = "1";
  refused(j, "regions[1].device");
  j = to_json(two_device_manifest());
  j["device"]["ordinal"] = 4096;
  refused(j, "device.ordinal");
  j = to_json(two_device_manifest());
  j["device"]["uuid"] = 7;
  refused(j, "device.uuid");
}
}  // namespace kerncap::format
