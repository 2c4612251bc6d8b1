// Profile mode's record handling, fed with fake CUPTI activity records: what reaches the
// record file for kernels, copies, sets and devices, records of other kinds, CUPTI's
// dropped count, and a buffer whose walk fails.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "capture/activity.hpp"
#include "capture_fakes.hpp"

using namespace kerncap::capture;
using kerncap::capture::testing::TempDir;
using kerncap::format::ProcessRecords;
using kerncap::format::RecordWriter;

namespace {

// A completed buffer holding the given records, in order.
struct FakeBuffer : ActivityBuffer {
  std::vector<CUpti_Activity*> records;
  size_t dropped_count = 0;
  size_t pos = 0;
  bool fail_after_first = false;
  bool next(CUpti_Activity** record) override {
    if (fail_after_first && pos == 1) throw std::bad_alloc();
    if (pos >= records.size()) return false;
    *record = records[pos++];
    return true;
  }
  size_t dropped() override { return dropped_count; }
};

template <typename R>
R zeroed(CUpti_ActivityKind kind) {
  R r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  return r;
}

ProcessRecords write_and_read(const TempDir& dir, FakeBuffer& buffer) {
  RecordWriter w;
  kerncap::format::ProcessInfo info;
  info.pid = 4321;
  EXPECT_TRUE(w.open(dir.path(), info));
  ActivityRecorder(w).drain(buffer);
  w.finish("exit");
  auto all = kerncap::format::read_records(dir.path());
  EXPECT_EQ(all.size(), 1u);
  return all.empty() ? ProcessRecords{} : all[0];
}

}  // namespace

TEST(CaptureActivity, KernelCopySetAndDeviceRecords) {
  auto dev = zeroed<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
  dev.id = 0;
  dev.name = "NVIDIA H100 80GB HBM3";
  dev.computeCapabilityMajor = 9;
  dev.numMultiprocessors = 132;
  dev.globalMemorySize = 80ull << 30;
  auto k = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = "_Z5scalePfi";
  k.start = 1000;
  k.end = 3500;
  k.gridX = 128, k.gridY = 1, k.gridZ = 1;
  k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  k.clusterX = 2, k.clusterY = 1, k.clusterZ = 1;
  k.registersPerThread = 32;
  k.dynamicSharedMemory = 4096;
  k.streamId = 7;
  k.correlationId = 99;
  k.graphId = 3;
  auto serial = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_KERNEL);  // the serial-kernel kind
  serial.name = nullptr;                                                      // CUPTI gave no name
  auto cp = zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  cp.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  cp.bytes = 1 << 20;
  cp.start = 10;
  cp.end = 20;
  auto ms = zeroed<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  ms.bytes = 512;
  auto other = zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MARKER);  // a kind profile mode never enables

  FakeBuffer buffer;
  for (CUpti_Activity* r : {reinterpret_cast<CUpti_Activity*>(&dev), reinterpret_cast<CUpti_Activity*>(&k),
                            reinterpret_cast<CUpti_Activity*>(&serial), reinterpret_cast<CUpti_Activity*>(&cp),
                            reinterpret_cast<CUpti_Activity*>(&ms), reinterpret_cast<CUpti_Activity*>(&other)})
    buffer.records.push_back(r);
  TempDir dir("activity");
  ProcessRecords p = write_and_read(dir, buffer);

  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.devices[0].cc_major, 9);
  EXPECT_EQ(p.devices[0].sms, 132u);
  ASSERT_EQ(p.kernels.size(), 2u);
  const auto& kr = p.kernels[0];
  EXPECT_EQ(p.names[kr.name_id], "_Z5scalePfi");
  EXPECT_EQ(kr.start_ns, 1000u);
  EXPECT_EQ(kr.end_ns, 3500u);
  EXPECT_EQ(kr.grid[0], 128);
  EXPECT_EQ(kr.block[0], 256);
  EXPECT_EQ(kr.cluster[0], 2u);
  EXPECT_EQ(kr.registers, 32u);
  EXPECT_EQ(kr.dynamic_shared, 4096);
  EXPECT_EQ(kr.stream, 7u);
  EXPECT_EQ(kr.correlation, 99u);
  EXPECT_EQ(kr.graph_id, 3u);
  EXPECT_EQ(p.names[p.kernels[1].name_id], "<unnamed kernel>");
  ASSERT_EQ(p.memops.size(), 2u);
  EXPECT_FALSE(p.memops[0].memset);
  EXPECT_EQ(p.memops[0].copy_kind, "HtoD");
  EXPECT_EQ(p.memops[0].bytes, 1u << 20);
  EXPECT_TRUE(p.memops[1].memset);
  EXPECT_EQ(p.memops[1].bytes, 512u);
  EXPECT_EQ(p.dropped, 0u);
  EXPECT_TRUE(p.complete);
}

TEST(CaptureActivity, BenchmarkWindowCorrelationsMarkTheirKernels) {
  // CUPTI links each API call made inside a window to kerncap's external-correlation kind;
  // the record may come before or after the kernel's (joined when the file is read).
  auto before = zeroed<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  before.externalKind = kBenchmarkCorrelationKind;
  before.correlationId = 10;
  auto bench = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  bench.name = "triton_poi_fused_0";
  bench.correlationId = 10;
  auto own = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  own.name = "triton_poi_fused_0";
  own.correlationId = 11;
  auto late_kernel = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  late_kernel.name = "triton_poi_fused_0";
  late_kernel.correlationId = 12;
  auto after = before;
  after.correlationId = 12;
  auto foreign = before;  // another tool's kind: not a kerncap window
  foreign.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  foreign.correlationId = 11;
  FakeBuffer buffer;
  for (CUpti_Activity* r : {reinterpret_cast<CUpti_Activity*>(&before), reinterpret_cast<CUpti_Activity*>(&bench),
                            reinterpret_cast<CUpti_Activity*>(&own), reinterpret_cast<CUpti_Activity*>(&late_kernel),
                            reinterpret_cast<CUpti_Activity*>(&after), reinterpret_cast<CUpti_Activity*>(&foreign)})
    buffer.records.push_back(r);
  TempDir dir("activity");
  ProcessRecords p = write_and_read(dir, buffer);
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_TRUE(p.kernels[0].benchmark);
  EXPECT_FALSE(p.kernels[1].benchmark);
  EXPECT_TRUE(p.kernels[2].benchmark);
}

TEST(CaptureActivity, DroppedRecordsAreCounted) {
  FakeBuffer buffer;
  buffer.dropped_count = 17;
  TempDir dir("activity");
  EXPECT_EQ(write_and_read(dir, buffer).dropped, 17u);
}

TEST(CaptureActivity, AFailingBufferLosesOnlyItsRest) {
  auto k = zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = "first";
  auto k2 = k;
  k2.name = "second";
  FakeBuffer buffer;
  buffer.records = {reinterpret_cast<CUpti_Activity*>(&k), reinterpret_cast<CUpti_Activity*>(&k2)};
  buffer.fail_after_first = true;
  TempDir dir("activity");
  ProcessRecords p;
  EXPECT_NO_THROW(p = write_and_read(dir, buffer));  // drain never throws
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.names[p.kernels[0].name_id], "first");
}

TEST(CaptureActivity, CopyKindNames) {
  EXPECT_STREQ(copy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), "DtoH");
  EXPECT_STREQ(copy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "DtoD");
  EXPECT_STREQ(copy_kind_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "PtoP");
  EXPECT_STREQ(copy_kind_name(200), "unknown");
}
