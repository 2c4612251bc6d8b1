// Which GPU a replay runs on, decided over fake device lists (no GPU): --device, the
// captured model first, the refusal of another architecture; and what replay says about
// peer memory and refuses for NCCL's kernels.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "replay/device_choice.hpp"
#include "replay/peer.hpp"

using namespace kerncap;
using namespace kerncap::replay;

namespace {

format::Manifest captured_on(int ordinal, const std::string& name, int major, int minor, const std::string& uuid) {
  format::Manifest m;
  m.device_ordinal = ordinal;
  m.device_name = name;
  m.cc_major = major;
  m.cc_minor = minor;
  m.device_uuid = uuid;
  m.mangled_name = "_Z4gemmv";
  m.demangled_name = "gemm()";
  return m;
}

ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::Internal;
}

}  // namespace

TEST(ReplayDeviceChoice, DefaultIsTheFirstOfTheCapturedModel) {
  const auto m = captured_on(1, "NVIDIA H100 80GB HBM3", 9, 0, "GPU-3333");
  const std::vector<DeviceDesc> devs{{0, "NVIDIA A100-SXM4-80GB", 8, 0, "GPU-aaaa"},
                                     {1, "NVIDIA H100 PCIe", 9, 0, "GPU-1111"},
                                     {2, "NVIDIA H100 80GB HBM3", 9, 0, "GPU-2222"},
                                     {3, "NVIDIA H100 80GB HBM3", 9, 0, "GPU-3333"}};
  const auto c = choose_device(m, devs, std::nullopt);
  EXPECT_EQ(c.ordinal, 2);  // the model beats the PCIe card of the same compute capability
  EXPECT_EQ(c.why, "the first of the captured model");
  EXPECT_FALSE(c.same_gpu);
}

TEST(ReplayDeviceChoice, ThenTheSameComputeCapability) {
  const auto m = captured_on(0, "NVIDIA H100 80GB HBM3", 9, 0, "");
  const std::vector<DeviceDesc> devs{{0, "NVIDIA A100-SXM4-80GB", 8, 0, ""}, {1, "NVIDIA H100 PCIe", 9, 0, "GPU-3333"}};
  const auto c = choose_device(m, devs, std::nullopt);
  EXPECT_EQ(c.ordinal, 1);
  EXPECT_EQ(c.why, "the first of the captured compute capability");
}

TEST(ReplayDeviceChoice, AskedDeviceIsTakenAndRecognisedAsTheCapturesGpu) {
  const auto m = captured_on(1, "NVIDIA H100 80GB HBM3", 9, 0, "GPU-2222");
  const std::vector<DeviceDesc> devs{{0, "NVIDIA H100 80GB HBM3", 9, 0, "GPU-1111"},
                                     {1, "NVIDIA H100 80GB HBM3", 9, 0, "GPU-2222"}};
  auto c = choose_device(m, devs, 1);
  EXPECT_EQ(c.ordinal, 1);
  EXPECT_TRUE(c.same_gpu);
  EXPECT_EQ(c.line(m), "device 1 (NVIDIA H100 80GB HBM3): as asked (--device 1); the GPU of the capture");
  c = choose_device(m, devs, 0);
  EXPECT_EQ(c.ordinal, 0);
  EXPECT_FALSE(c.same_gpu);
  EXPECT_EQ(c.line(m), "device 0 (NVIDIA H100 80GB HBM3): as asked (--device 0); captured on device 1 of the application");
}

TEST(ReplayDeviceChoice, LineSaysWhatDiffersFromTheCapturesMachine) {
  auto m = captured_on(0, "NVIDIA H100 80GB HBM3", 9, 0, "");
  m.driver_version = 12080;
  const std::vector<DeviceDesc> devs{{0, "NVIDIA H200", 9, 0, "GPU-9999"}};
  auto c = choose_device(m, devs, std::nullopt);
  EXPECT_EQ(c.line(m), "device 0 (NVIDIA H200): the first of the captured compute capability; captured on device 0 of "
                       "the application, another model (NVIDIA H100 80GB HBM3): its timings do not compare with this "
                       "one's");
  c.driver_version = 13000;
  EXPECT_NE(c.line(m).find("; captured under driver 12.8, replayed under 13.0"), std::string::npos) << c.line(m);
  c.driver_version = 12080;  // the same driver: nothing said
  EXPECT_EQ(c.line(m).find("driver"), std::string::npos);
  m.driver_version = 0;  // an older manifest without it: nothing said
  c.driver_version = 13000;
  EXPECT_EQ(c.line(m).find("driver"), std::string::npos);
}

TEST(ReplayDeviceChoice, AnotherArchitectureIsRefusedNamingTheDevicesThatWouldDo) {
  const auto m = captured_on(0, "NVIDIA H100 80GB HBM3", 9, 0, "");
  const std::vector<DeviceDesc> devs{{0, "NVIDIA A100-SXM4-80GB", 8, 0, ""}, {1, "NVIDIA H100 80GB HBM3", 9, 0, ""}};
  try {
    choose_device(m, devs, 0);
    FAIL() << "accepted an sm_80 device for an sm_90 capture";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    const std::string w = e.what();
    EXPECT_NE(w.find("sm_90"), std::string::npos) << w;
    EXPECT_NE(w.find("device 0 (NVIDIA A100-SXM4-80GB, sm_80)"), std::string::npos) << w;
    EXPECT_NE(w.find("of the captured architecture: 1 (--device N)"), std::string::npos) << w;
  }
  // Only other architectures visible: refused, saying none is here.
  try {
    choose_device(m, {{0, "NVIDIA A100-SXM4-80GB", 8, 0, ""}}, std::nullopt);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none is visible here"), std::string::npos) << e.what();
  }
}

TEST(ReplayDeviceChoice, BadOrdinalsAndNoDevices) {
  const auto m = captured_on(0, "NVIDIA H100 80GB HBM3", 9, 0, "");
  EXPECT_EQ(kind_of([&] { choose_device(m, {{0, "NVIDIA H100 80GB HBM3", 9, 0, ""}}, 1); }), ErrorKind::Usage);
  EXPECT_EQ(kind_of([&] { choose_device(m, {}, std::nullopt); }), ErrorKind::Device);
}

TEST(ReplayDeviceChoice, CapturedOrdinalWhenNoModelMatchesIsStillCheckedForArchitecture) {
  auto m = captured_on(1, "Some GPU", 9, 0, "");
  EXPECT_EQ(kind_of([&] { choose_device(m, {{0, "A", 8, 0, ""}, {1, "B", 8, 6, ""}}, std::nullopt); }),
            ErrorKind::Input);
}

TEST(ReplayPeer, PeerRegionsAreNamedAndOwnOnesAreSilent) {
  auto m = captured_on(0, "NVIDIA H100 80GB HBM3", 9, 0, "");
  m.regions = {{0, format::MemKind::Device, 0x1000, 4096, "mem/0.bin", 0, "", 0},
               {1, format::MemKind::Device, 0x100000, 1 << 20, "mem/1.bin", 0, "", 1},
               {2, format::MemKind::Managed, 0x200000, 64, "mem/2.bin", 0, ""}};
  const std::string note = peer_note(m, 1);
  EXPECT_NE(note.find("1 region(s) (1.0 MiB) lived on other GPU(s) of the application (device 1"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("restored on device 1 at their captured addresses"), std::string::npos) << note;
  m.regions.resize(1);
  EXPECT_EQ(peer_note(m, 0), "");
}

TEST(ReplayPeer, NcclKernelsAreRefusedWithTheReason) {
  auto m = captured_on(0, "NVIDIA H100 80GB HBM3", 9, 0, "");
  EXPECT_NO_THROW(refuse_unreplayable(m));
  m.mangled_name = "_Z31ncclDevKernel_AllReduce_Sum_f32P13ncclDevCommn";
  m.demangled_name = "ncclDevKernel_AllReduce_Sum_f32(ncclDevComm*)";
  try {
    refuse_unreplayable(m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("one rank's half of a collective"), std::string::npos) << e.what();
  }
  m.mangled_name = m.demangled_name = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t";
  EXPECT_THROW(refuse_unreplayable(m), Error);
}
