// A window of launches, driven by fake CUPTI callbacks through the watcher and the window
// recorder as window_mode.cpp wires them (the recorder first, then the watcher): which launch
// opens the window, which operations it records (launches, memsets, device-to-device copies
// on its stream), what it leaves out (other streams, host-to-device copies), where it ends,
// the in-app times from kernel records, and the failures (the application ending first, a
// launch that cannot be described). No GPU: WindowOps and WindowEnds are faked.
#include <gtest/gtest.h>

#include "capture/events.hpp"
#include "capture/watcher.hpp"
#include "capture/window_recorder.hpp"
#include "capture_fakes.hpp"

using namespace kerncap::capture;
using namespace kerncap::capture::testing;
using kerncap::format::WindowOp;

namespace {

constexpr const char* kNorm = "_Z8rms_normPfPKfi";
constexpr const char* kGemm = "_Z4gemmPfPKfS1_i";
constexpr const char* kAct = "_Z4siluPfi";

CUstream stream(uintptr_t v) { return reinterpret_cast<CUstream>(v); }

struct FakeOps : WindowOps {
  std::vector<std::string> described;  // kernels described, in order
  std::string refuse;                  // a kernel name that cannot be described
  bool describe_kernel(CUpti_CallbackId, const CUpti_CallbackData& cb, const std::string& mangled, size_t index,
                       WindowOp* op, std::string* why) override {
    if (mangled == refuse) {
      *why = "its code image was not seen";
      return false;
    }
    described.push_back(mangled);
    const auto* p = static_cast<const cuLaunchKernel_params*>(cb.functionParams);
    op->kind = WindowOp::Kind::Kernel;
    op->mangled = mangled;
    op->grid = {p->gridDimX, p->gridDimY, p->gridDimZ};
    op->image_hash = 0x100 + index;
    op->image_kind = "cubin";
    return true;
  }
  uint64_t clock = 1000;
  uint64_t gpu_clock_ns() override { return clock; }
};

struct FakeEnds : WindowEnds {
  bool accept = true;
  std::vector<uint32_t> begun;
  struct Finished {
    uint32_t first, last;
    kerncap::format::Window window;
  };
  std::vector<Finished> finished;
  std::vector<std::pair<uint32_t, std::string>> abandoned;
  bool begin(const TargetLaunch& t) override {
    begun.push_back(t.entry->correlationId);
    return accept;
  }
  void finish(uint32_t first, const CUpti_CallbackData& last, const std::function<kerncap::format::Window()>& w) override {
    finished.push_back({first, last.correlationId, w()});
  }
  void abandon(uint32_t first, const std::string& why) override { abandoned.emplace_back(first, why); }
};

struct Harness {
  TempDir dir{"window"};
  Config config;
  std::unique_ptr<Inventory> inventory;
  FakeQueries driver;
  FakeOps ops;
  FakeEnds ends;
  std::unique_ptr<WindowRecorder> recorder;
  std::unique_ptr<LaunchWatcher> watcher;
  uint32_t next = 1;

  Harness(const char* from, uint64_t from_dispatch, const char* to, uint64_t to_dispatch) {
    config.mode = Mode::Capture;
    config.output = dir.path().string();
    config.kernel = from;
    config.dispatch = from_dispatch;
    config.window_end = to;
    config.window_end_dispatch = to_dispatch;
    config.closure_all = true;
    events_open(config.output);
    inventory = std::make_unique<Inventory>(config);
    recorder = std::make_unique<WindowRecorder>(config, *inventory, driver, ops, ends);
    watcher = std::make_unique<LaunchWatcher>(config, *inventory, driver, *recorder);
  }
  void call(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
    recorder->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb);
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb);
  }
  // One launch, entry then exit; returns its correlation id.
  uint32_t launch(const char* symbol, CUstream s = nullptr) {
    const uint32_t c = next++;
    FakeLaunch l(symbol, c, s);
    call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
    return c;
  }
  void memset_async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
    FakeCall<cuMemsetD8Async_params> m(cuMemsetD8Async_params{dst, v, n, s}, CUPTI_API_ENTER, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m.cb);
    m.cb.callbackSite = CUPTI_API_EXIT;
    call(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, &m.cb);
  }
  void copy_d2d(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    FakeCall<cuMemcpyDtoDAsync_v2_params> m(cuMemcpyDtoDAsync_v2_params{dst, src, n, s}, CUPTI_API_ENTER, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, &m.cb);
  }
  void alloc(size_t n) {
    CUdeviceptr p = 0;
    FakeCall<cuMemAlloc_v2_params> m(cuMemAlloc_v2_params{&p, n}, CUPTI_API_ENTER, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &m.cb);
  }
  void copy_h2d(CUdeviceptr dst, size_t n, CUstream s) {
    static const char host[16] = {};
    FakeCall<cuMemcpyHtoDAsync_v2_params> m(cuMemcpyHtoDAsync_v2_params{dst, host, n, s}, CUPTI_API_ENTER, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &m.cb);
  }
};

std::vector<std::string> kinds_and_names(const kerncap::format::Window& w) {
  std::vector<std::string> out;
  for (const auto& op : w.ops) out.push_back(op.kind == WindowOp::Kind::Kernel ? op.mangled : to_string(op.kind));
  return out;
}

}  // namespace

TEST(CaptureWindow, FromTheNthLaunchOfFromToTheNextMatchOfTo) {
  Harness h("rms_norm", 1, "silu", 0);
  const CUstream s = stream(0x50);
  h.launch(kNorm, s);  // norm match 0: before the window
  h.launch(kGemm, s);
  h.launch(kAct, s);  // an act before the window does not count towards its end
  EXPECT_TRUE(h.ends.begun.empty());
  const uint32_t first = h.launch(kNorm, s);  // match 1: the window opens
  ASSERT_EQ(h.ends.begun, std::vector<uint32_t>{first});
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Open);
  h.launch(kGemm, s);
  h.memset_async(0x7000, 0xab, 64, s);
  h.copy_d2d(0x8000, 0x9000, 128, s);
  EXPECT_TRUE(h.ends.finished.empty());
  const uint32_t last = h.launch(kAct, s);
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(h.ends.finished[0].first, first);
  EXPECT_EQ(h.ends.finished[0].last, last);
  const auto& w = h.ends.finished[0].window;
  EXPECT_EQ(kinds_and_names(w), (std::vector<std::string>{kNorm, kGemm, "memset", "copy_d2d", kAct}));
  EXPECT_EQ(w.ops[2].dst, 0x7000u);
  EXPECT_EQ(w.ops[2].value, 0xabu);
  EXPECT_EQ(w.ops[2].width, 64u);
  EXPECT_EQ(w.ops[2].element_size, 1u);
  EXPECT_EQ(w.ops[3].src, 0x9000u);
  EXPECT_EQ(w.ops[3].bytes, 128u);
  EXPECT_EQ(w.ops[0].launch_index, 3u);  // the process's 4th launch
  EXPECT_EQ(w.ops[1].launch_index, 4u);
  EXPECT_EQ(w.ops[4].launch_index, 5u);
  EXPECT_EQ(w.from, "rms_norm");
  EXPECT_EQ(w.from_dispatch, 1u);
  EXPECT_EQ(w.to, "silu");
  EXPECT_EQ(w.stream, 0x50u);
  EXPECT_EQ(w.foreign_ops, 0u);
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Done);
  // Nothing after the window is recorded or begins another.
  h.launch(kNorm, s);
  h.launch(kAct, s);
  EXPECT_EQ(h.ends.begun.size(), 1u);
  EXPECT_EQ(h.ends.finished.size(), 1u);
  EXPECT_TRUE(h.ends.abandoned.empty());
}

TEST(CaptureWindow, OtherStreamsAndHostCopiesAreCountedNotRecorded) {
  Harness h("rms_norm", 0, "silu", 0);
  const CUstream s = stream(0x50), other = stream(0x60);
  h.launch(kNorm, s);
  h.launch(kGemm, other);  // another stream
  h.memset_async(0x7000, 1, 8, other);
  h.copy_h2d(0x7000, 16, s);  // the host bytes are not kept: noted
  h.alloc(1 << 20);           // memory that did not exist at the window's start
  h.launch(kAct, other);      // the end's pattern on another stream does not end it
  EXPECT_TRUE(h.ends.finished.empty());
  h.launch(kAct, s);
  ASSERT_EQ(h.ends.finished.size(), 1u);
  const auto& w = h.ends.finished[0].window;
  EXPECT_EQ(kinds_and_names(w), (std::vector<std::string>{kNorm, kAct}));
  EXPECT_EQ(w.foreign_ops, 5u);
  ASSERT_GE(w.foreign_examples.size(), 4u);
  EXPECT_NE(w.foreign_examples[0].find("another stream"), std::string::npos);
  bool h2d = false, alloc = false;
  for (const auto& e : w.foreign_examples) {
    h2d |= e.find("host-to-device") != std::string::npos;
    alloc |= e.find("allocation inside the window") != std::string::npos;
  }
  EXPECT_TRUE(h2d);
  EXPECT_TRUE(alloc);
}

TEST(CaptureWindow, TheEndCountsFromTheFirstLaunchItself) {
  // FROM and TO name the same kernel: @0 is the first launch (a window of one), @1 the next.
  Harness one("gemm", 0, "gemm", 0);
  const uint32_t c = one.launch(kGemm);
  ASSERT_EQ(one.ends.finished.size(), 1u);
  EXPECT_EQ(one.ends.finished[0].first, c);
  EXPECT_EQ(one.ends.finished[0].last, c);
  EXPECT_EQ(one.ends.finished[0].window.ops.size(), 1u);

  Harness two("gemm", 0, "gemm", 1);
  two.launch(kGemm);
  two.launch(kAct);
  EXPECT_TRUE(two.ends.finished.empty());
  two.launch(kGemm);
  ASSERT_EQ(two.ends.finished.size(), 1u);
  EXPECT_EQ(kinds_and_names(two.ends.finished[0].window), (std::vector<std::string>{kGemm, kAct, kGemm}));
}

TEST(CaptureWindow, TheApplicationEndingFirstAbandonsTheWindow) {
  Harness h("rms_norm", 0, "silu", 2);
  const uint32_t first = h.launch(kNorm);
  h.launch(kAct);
  h.launch(kAct);
  h.recorder->at_exit();
  ASSERT_EQ(h.ends.abandoned.size(), 1u);
  EXPECT_EQ(h.ends.abandoned[0].first, first);
  EXPECT_NE(h.ends.abandoned[0].second.find("matched 2 time(s) of the 3 needed"), std::string::npos)
      << h.ends.abandoned[0].second;
  EXPECT_TRUE(h.ends.finished.empty());
  h.recorder->at_exit();  // once
  EXPECT_EQ(h.ends.abandoned.size(), 1u);
}

TEST(CaptureWindow, ALaunchThatCannotBeDescribedAbandonsTheWindow) {
  Harness h("rms_norm", 0, "silu", 0);
  h.ops.refuse = kGemm;
  h.launch(kNorm);
  h.launch(kGemm);
  ASSERT_EQ(h.ends.abandoned.size(), 1u);
  EXPECT_NE(h.ends.abandoned[0].second.find("its code image was not seen"), std::string::npos);
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Done);
  h.launch(kAct);
  EXPECT_TRUE(h.ends.finished.empty());
}

TEST(CaptureWindow, AFailedBeforeOpensNoWindow) {
  Harness h("rms_norm", 0, "silu", 0);
  h.ends.accept = false;
  h.launch(kNorm);
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Done);
  h.launch(kAct);
  EXPECT_TRUE(h.ends.finished.empty());
  EXPECT_TRUE(h.ends.abandoned.empty());  // the capturer reported its own failure
}

TEST(CaptureWindow, InAppTimesByCorrelationElseByNameInOrder) {
  Harness h("rms_norm", 0, "silu", 0);
  h.ops.clock = 5000;  // the window opens at 5000 ns on CUPTI's clock
  const uint32_t a = h.launch(kNorm);
  h.launch(kGemm);
  h.memset_async(0x7000, 0, 8, nullptr);
  h.launch(kAct);
  // Records as CUPTI delivers them at the flush: a record from before the window (same
  // kernel name) is ignored; the gemm's and silu's carry other correlation ids (a runtime
  // launch's record carries the runtime call's), matched by name in launch order.
  h.recorder->on_kernel_record(999, kGemm, 100, 200);    // before the window opened
  h.recorder->on_kernel_record(a, kNorm, 6000, 6500);    // by correlation
  h.recorder->on_kernel_record(777, kGemm, 6600, 8600);  // by name
  h.recorder->on_kernel_record(778, kAct, 8700, 9000);
  const auto w = h.recorder->window();
  ASSERT_EQ(w.ops.size(), 4u);
  EXPECT_EQ(w.ops[0].in_app_ns, 500u);
  EXPECT_EQ(w.ops[1].in_app_ns, 2000u);
  EXPECT_FALSE(w.ops[2].in_app_ns.has_value());  // a memset has no kernel record
  EXPECT_EQ(w.ops[3].in_app_ns, 300u);
  EXPECT_EQ(w.ops[1].in_app_start_ns, 600u);
  ASSERT_TRUE(w.in_app_window_ns.has_value());
  EXPECT_EQ(*w.in_app_window_ns, 3000u);  // 6000 .. 9000
  EXPECT_EQ(*w.in_app_kernels_ns, 2800u);
}

TEST(CaptureWindow, NoWindowTimeWhenAKernelHasNoRecord) {
  Harness h("rms_norm", 0, "silu", 0);
  const uint32_t a = h.launch(kNorm);
  h.launch(kAct);
  h.recorder->on_kernel_record(a, kNorm, 2000, 2100);
  const auto w = h.recorder->window();
  EXPECT_EQ(w.ops[0].in_app_ns, 100u);
  EXPECT_FALSE(w.in_app_window_ns.has_value());
}

TEST(CaptureWindow, ItsCallbackIdsIncludeMemsetsAndCopies) {
  const auto ids = WindowRecorder::callback_ids();
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
                              CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2})
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
}
