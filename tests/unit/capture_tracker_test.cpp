// Allocation tracking fed with fake CUPTI driver callbacks: every allocation and free the
// tracker handles, failed calls, API entries, and VMM unmaps cutting ranges.
#include <gtest/gtest.h>

#include "capture/tracker.hpp"
#include "capture_fakes.hpp"
#include "format/manifest.hpp"

using namespace kerncap::capture;
using kerncap::capture::testing::FakeCall;
using kerncap::format::MemKind;

namespace {

int kind(MemKind k) { return static_cast<int>(k); }

template <typename P>
bool feed(Tracker& t, CUpti_CallbackId cbid, const P& p, CUresult result = CUDA_SUCCESS,
          CUpti_ApiCallbackSite site = CUPTI_API_EXIT) {
  FakeCall<P> call(p, site);
  call.result = result;
  return t.on_driver_api(cbid, &call.cb);
}

// The one live range, or a failure.
TrackedRange only(const Tracker& t) {
  auto live = t.live();
  EXPECT_EQ(live.size(), 1u);
  return live.empty() ? TrackedRange{} : live[0];
}

}  // namespace

TEST(CaptureTracker, DeviceAllocationsOfEveryKind) {
  CUdeviceptr d = 0x7f0000000000;
  size_t pitch = 512;
  {
    Tracker t;
    EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&d, 4096}));
    EXPECT_EQ(only(t).base, d);
    EXPECT_EQ(only(t).size, 4096u);
    EXPECT_EQ(only(t).kind, kind(MemKind::Device));
    EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, cuMemFree_v2_params{d}));
    EXPECT_TRUE(t.live().empty());
  }
  {
    Tracker t;  // pitch * height bytes, not width * height
    cuMemAllocPitch_v2_params p{&d, &pitch, 300, 10, 4};
    EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2, p));
    EXPECT_EQ(only(t).size, 5120u);
    EXPECT_EQ(only(t).kind, kind(MemKind::Pitch));
  }
  for (auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz}) {
    Tracker t;
    EXPECT_TRUE(feed(t, cbid, cuMemAllocAsync_params{&d, 256, nullptr}));
    EXPECT_EQ(only(t).kind, kind(MemKind::Async));
    for (auto free_id : {CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz}) {
      EXPECT_TRUE(feed(t, cbid, cuMemAllocAsync_params{&d, 256, nullptr}));
      EXPECT_TRUE(feed(t, free_id, cuMemFreeAsync_params{d, nullptr}));
      EXPECT_TRUE(t.live().empty());
    }
  }
  for (auto cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync, CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz}) {
    Tracker t;
    EXPECT_TRUE(feed(t, cbid, cuMemAllocFromPoolAsync_params{&d, 1024, nullptr, nullptr}));
    EXPECT_EQ(only(t).size, 1024u);
    EXPECT_EQ(only(t).kind, kind(MemKind::Async));
  }
  {
    Tracker t;
    EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, cuMemAllocManaged_params{&d, 64, 1}));
    EXPECT_EQ(only(t).kind, kind(MemKind::Managed));
  }
}

TEST(CaptureTracker, HostMemoryTheDeviceCanSee) {
  alignas(64) static char host[8192];
  void* hp = host;
  const uint64_t base = reinterpret_cast<uint64_t>(host);
  for (auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2}) {
    Tracker t;
    EXPECT_TRUE(feed(t, cbid, cuMemHostAlloc_params{&hp, 4096, 0}));
    EXPECT_EQ(only(t).base, base);
    EXPECT_EQ(only(t).kind, kind(MemKind::HostMapped));
    EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, cuMemFreeHost_params{hp}));
    EXPECT_TRUE(t.live().empty());
  }
  for (auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2}) {
    Tracker t;
    EXPECT_TRUE(feed(t, cbid, cuMemAllocHost_v2_params{&hp, 2048}));
    EXPECT_EQ(only(t).size, 2048u);
    EXPECT_EQ(only(t).kind, kind(MemKind::HostMapped));
  }
  for (auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2}) {
    Tracker t;
    EXPECT_TRUE(feed(t, cbid, cuMemHostRegister_v2_params{host, 8192, 0}));
    EXPECT_EQ(only(t).kind, kind(MemKind::HostRegistered));
    EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, cuMemHostUnregister_params{host}));
    EXPECT_TRUE(t.live().empty());
  }
}

TEST(CaptureTracker, VmmMapsAndUnmapsCutRanges) {
  Tracker t;
  const CUdeviceptr va = 0x7e0000000000;
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemMap, cuMemMap_params{va, 6 << 20, 0, 0, 0}));
  EXPECT_EQ(only(t).kind, kind(MemKind::Vmm));
  // Unmapping the middle 2 MiB leaves two pieces.
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, cuMemUnmap_params{va + (2 << 20), 2 << 20}));
  auto live = t.live();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].base, va);
  EXPECT_EQ(live[0].size, 2u << 20);
  EXPECT_EQ(live[1].base, va + (4 << 20));
  EXPECT_EQ(live[1].size, 2u << 20);
}

TEST(CaptureTracker, OnlySuccessfulCallsAtApiExitCount) {
  Tracker t;
  CUdeviceptr d = 0x1000;
  // At API entry the allocation has not happened yet: nothing is tracked.
  EXPECT_FALSE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&d, 64}, CUDA_SUCCESS,
                    CUPTI_API_ENTER));
  EXPECT_FALSE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&d, 64},
                    CUDA_ERROR_OUT_OF_MEMORY));
  EXPECT_TRUE(t.live().empty());
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&d, 64}));
  // A failed free leaves the allocation live.
  EXPECT_FALSE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, cuMemFree_v2_params{d}, CUDA_ERROR_INVALID_VALUE));
  EXPECT_EQ(t.live().size(), 1u);
  // Calls that are not memory calls are not the tracker's.
  EXPECT_FALSE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, 0));
}

TEST(CaptureTracker, ANewAllocationTakesAStaleRangesBytes) {
  Tracker t;
  CUdeviceptr d = 0x2000;
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&d, 0x1000}));
  // Its free was never seen (made by a path we do not watch) and the driver hands part of
  // it out again: the new allocation owns those bytes, the stale remainders stay tracked
  // (snapshotting too much is harmless, too little is not).
  CUdeviceptr e = 0x2040;
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&e, 0x20}));
  auto live = t.live();
  ASSERT_EQ(live.size(), 3u);
  EXPECT_EQ(live[0].base, 0x2000u);
  EXPECT_EQ(live[0].size, 0x40u);
  EXPECT_EQ(live[1].base, e);
  EXPECT_EQ(live[1].size, 0x20u);
  EXPECT_EQ(live[2].base, 0x2060u);
  EXPECT_EQ(live[2].end(), 0x3000u);
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, cuMemFree_v2_params{e}));
  EXPECT_EQ(t.live().size(), 2u);
  // Zero-byte allocations track nothing.
  CUdeviceptr z = 0x9000;
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, cuMemAlloc_v2_params{&z, 0}));
  EXPECT_EQ(t.live().size(), 2u);
}
