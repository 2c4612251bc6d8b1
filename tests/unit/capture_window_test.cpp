// A window of launches, driven by fake CUPTI callbacks through the watcher and the window
// recorder as window_mode.cpp wires them (the recorder first, then the watcher): which launch
// opens the window, which operations it records (launches, memsets, device-to-device copies
// on its stream), what it leaves out (other streams, host-to-device copies), where it ends,
// the in-app times from kernel records, and the failures (the application ending first, a
// launch that cannot be described). No GPU: WindowOps and WindowEnds are faked.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "capture/events.hpp"
#include "capture/watcher.hpp"
#include "capture/window_recorder.hpp"
#include "format/window.hpp"
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
  // After the window: each kernel's parameter bytes (the live-out observation), by symbol.
  std::map<std::string, std::vector<uint8_t>> params;
  bool launch_params(CUpti_CallbackId, const CUpti_CallbackData& cb, std::vector<uint8_t>* bytes) override {
    const auto it = params.find(cb.symbolName ? cb.symbolName : "");
    if (it == params.end()) return false;
    *bytes = it->second;
    return true;
  }
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
  // What finish reports as published: nullopt (as if not published: no observation) unless set.
  std::optional<std::vector<WindowChanged>> changed;
  std::optional<std::vector<WindowChanged>> finish(uint32_t first, const CUpti_CallbackData& last,
                                                   const std::function<kerncap::format::Window()>& w) override {
    finished.push_back({first, last.correlationId, w()});
    return changed;
  }
  void abandon(uint32_t first, const std::string& why) override { abandoned.emplace_back(first, why); }
  std::vector<std::pair<kerncap::format::WindowLiveOut, bool>> observed_results;
  void observed(const kerncap::format::WindowLiveOut& r, bool horizon) override { observed_results.emplace_back(r, horizon); }
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
  void event_record(uintptr_t event, CUstream s) {
    FakeCall<cuEventRecord_params> m(cuEventRecord_params{reinterpret_cast<CUevent>(event), s}, CUPTI_API_ENTER, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, &m.cb);
  }
  void wait_event(CUstream s, uintptr_t event) {
    FakeCall<cuStreamWaitEvent_params> m(cuStreamWaitEvent_params{s, reinterpret_cast<CUevent>(event), 0},
                                         CUPTI_API_ENTER, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &m.cb);
  }
  void copy_d2h(CUdeviceptr src, size_t n) {
    static char host[16];
    FakeCall<cuMemcpyDtoH_v2_params> m(cuMemcpyDtoH_v2_params{host, src, n}, CUPTI_API_ENTER, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, &m.cb);
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
  // Another stream's work is foreign at the window's end (it would be the window's, had the
  // window's stream joined that stream through an event): named after what was foreign at once.
  bool other_stream = false, h2d = false, alloc = false;
  for (const auto& e : w.foreign_examples) {
    other_stream |= e.find("another stream") != std::string::npos;
    h2d |= e.find("host-to-device") != std::string::npos;
    alloc |= e.find("allocation inside the window") != std::string::npos;
  }
  EXPECT_TRUE(other_stream);
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

namespace {

std::vector<uint8_t> pointer_words(std::initializer_list<uint64_t> words) {
  std::vector<uint8_t> out(words.size() * 8);
  size_t i = 0;
  for (uint64_t w : words) std::memcpy(out.data() + 8 * i++, &w, 8);
  return out;
}

}  // namespace

// After the window the recorder watches the next launches (Config::window_observe) for
// pointers into the regions the window changed; at the horizon it reports what it saw.
TEST(CaptureWindow, ObservesLaterLaunchesForLiveOutUntilTheHorizon) {
  Harness h("rms_norm", 0, "silu", 0);
  h.config.window_observe = 3;
  const CUstream s = stream(0x50);
  // Regions 1 (h, 0x1000..0x2000), 2 (out, 0x3000..0x4000), 3 (acc, 0x5000..0x6000) changed.
  h.ends.changed = std::vector<WindowChanged>{{1, 0x1000, 0x1000, 0, 0x1000}, {2, 0x3000, 0x1000, 0, 0x800},
                                              {3, 0x5000, 0x1000, 0, 0x1000}};
  h.ops.params["consume"] = pointer_words({0x3010, 7});  // reads out (a pointer inside it)
  h.launch(kNorm, s);
  h.launch(kGemm, s);
  h.launch(kAct, s);
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Observing);
  h.memset_async(0x5000, 0, 0x1000, s);  // acc overwritten whole before any read: dead
  h.launch("consume", s);
  h.copy_d2h(0x5000, 16);  // too late for acc: already dead
  h.launch("other", stream(0x60));  // no parameters known: counted, reaches nothing
  EXPECT_TRUE(h.ends.observed_results.empty());
  h.ops.params["other"] = pointer_words({0x1000});
  h.launch("other", s);  // the third launch after the window: the horizon (reaches h)
  ASSERT_EQ(h.ends.observed_results.size(), 1u);
  const auto& [r, horizon] = h.ends.observed_results[0];
  EXPECT_TRUE(horizon);
  EXPECT_EQ(r.ended, "horizon");
  EXPECT_EQ(r.launches_observed, 3u);
  ASSERT_EQ(r.regions.size(), 3u);
  EXPECT_TRUE(r.find(1)->read);
  EXPECT_TRUE(r.find(2)->read);
  EXPECT_NE(r.find(2)->evidence.find("consume"), std::string::npos);
  EXPECT_FALSE(r.find(3)->read);
  EXPECT_NE(r.find(3)->evidence.find("memset"), std::string::npos);
  EXPECT_EQ(r.live(), (std::set<uint32_t>{1, 2}));
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Done);
}

TEST(CaptureWindow, LiveOutObservationEndsWithTheApplication) {
  Harness h("rms_norm", 0, "silu", 0);
  const CUstream s = stream(0x50);
  h.ends.changed = std::vector<WindowChanged>{{1, 0x1000, 0x100, 0, 0x100}, {2, 0x3000, 0x100, 0, 0x100}};
  h.launch(kNorm, s);
  h.launch(kAct, s);
  h.copy_d2h(0x3000, 0x100);  // the application copies its result out
  h.recorder->at_exit();
  ASSERT_EQ(h.ends.observed_results.size(), 1u);
  const auto& [r, horizon] = h.ends.observed_results[0];
  EXPECT_FALSE(horizon);
  EXPECT_EQ(r.ended, "application ended");
  EXPECT_FALSE(r.find(1)->read);
  EXPECT_NE(r.find(1)->evidence.find("before the application ended"), std::string::npos);
  EXPECT_TRUE(r.find(2)->read);
  EXPECT_TRUE(h.ends.abandoned.empty());
}

TEST(CaptureWindow, NoObservationWhenOffOrNotPublished) {
  Harness off("rms_norm", 0, "silu", 0);
  off.config.window_observe = 0;
  off.ends.changed = std::vector<WindowChanged>{{1, 0x1000, 0x100, 0, 0x100}};
  off.launch(kNorm);
  off.launch(kAct);
  EXPECT_EQ(off.recorder->state(), WindowRecorder::State::Done);
  Harness unpublished("rms_norm", 0, "silu", 0);  // finish reports nothing published
  unpublished.launch(kNorm);
  unpublished.launch(kAct);
  EXPECT_EQ(unpublished.recorder->state(), WindowRecorder::State::Done);
  unpublished.recorder->at_exit();
  EXPECT_TRUE(unpublished.ends.observed_results.empty());
}

// The window's stream waiting on an event another stream recorded after working during the
// window: refused, naming that stream (never a replay without its writes).
// A fork/join (tests/gpu/window_apps/two_streams.cu): the window's stream forks a side stream
// through an event, waits on the side's event before its end: the side's work is part of the
// window, tagged with its stream, with the event records and waits as operations. A third
// stream never joined stays foreign; waits on records made before the window are no operations.
TEST(CaptureWindow, StreamsJoinedByEventsArePartOfTheWindow) {
  Harness h("rms_norm", 0, "silu", 0);
  const CUstream s = stream(0x50), side = stream(0x60), third = stream(0x70);
  h.event_record(0xe9, side);  // before the window: its work is in BEFORE
  h.launch(kNorm, s);
  h.event_record(0xe0, s);
  h.wait_event(side, 0xe0);  // the fork
  h.launch(kGemm, side);
  h.memset_async(0x7000, 1, 8, side);
  h.event_record(0xe1, side);
  h.launch(kGemm, third);     // never joined: foreign
  h.wait_event(s, 0xe9);      // a record before the window: no dependency inside it
  h.event_record(0xe2, s);    // no joined stream waits on it: left out
  h.wait_event(s, 0xe1);      // the join: side becomes part of the window
  EXPECT_TRUE(h.ends.abandoned.empty());
  h.launch(kAct, s);
  ASSERT_EQ(h.ends.finished.size(), 1u) << (h.ends.abandoned.empty() ? "" : h.ends.abandoned[0].second);
  const auto& w = h.ends.finished[0].window;
  EXPECT_EQ(kinds_and_names(w), (std::vector<std::string>{kNorm, "event_record", "event_wait", kGemm, "memset",
                                                          "event_record", "event_wait", kAct}));
  std::vector<uint32_t> streams;
  for (const auto& op : w.ops) streams.push_back(op.stream);
  EXPECT_EQ(streams, (std::vector<uint32_t>{0, 0, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(w.ops[1].event, 0u);
  EXPECT_EQ(w.ops[2].event, 0u);
  EXPECT_EQ(w.ops[5].event, 1u);
  EXPECT_EQ(w.ops[6].event, 1u);
  EXPECT_EQ(w.streams, 2u);
  EXPECT_EQ(w.events, 2u);
  EXPECT_EQ(w.stream_handles, (std::vector<uint64_t>{0x50, 0x60}));
  EXPECT_EQ(w.foreign_ops, 1u);
  ASSERT_EQ(w.foreign_examples.size(), 1u);
  EXPECT_NE(w.foreign_examples[0].find("gemm"), std::string::npos);
  // Every kernel's parameter key is the one it was described under (the third stream's gemm,
  // left out, had one too): 0 for the first launch, unique for the rest.
  EXPECT_EQ(w.ops[0].params_key, 0u);
  EXPECT_NE(w.ops[3].params_key, w.ops[7].params_key);
  EXPECT_EQ(h.ops.described.size(), 4u);
  // window.json, version 2, reads back the same.
  const auto back = kerncap::format::window_from_json(kerncap::format::to_json(w));
  EXPECT_EQ(back.version, kerncap::format::kWindowVersion);
  EXPECT_EQ(back.streams, 2u);
  EXPECT_EQ(kinds_and_names(back), kinds_and_names(w));
  for (size_t i = 0; i < w.ops.size(); ++i) {
    EXPECT_EQ(back.ops[i].stream, w.ops[i].stream) << i;
    EXPECT_EQ(back.ops[i].event, w.ops[i].event) << i;
  }
}

// A stream joins with the streams it waited on before (transitively), whenever the join comes.
TEST(CaptureWindow, JoiningAStreamJoinsTheStreamsItWaitedOn) {
  Harness h("rms_norm", 0, "silu", 0);
  const CUstream s = stream(0x50), a = stream(0x60), b = stream(0x70);
  h.launch(kNorm, s);
  h.launch(kGemm, b);
  h.event_record(0xb0, b);
  h.wait_event(a, 0xb0);  // a depends on b: neither is the window's yet
  h.memset_async(0x7000, 2, 8, a);
  h.event_record(0xa0, a);
  h.wait_event(s, 0xa0);  // s joins a, and through it b
  h.launch(kAct, s);
  ASSERT_EQ(h.ends.finished.size(), 1u) << (h.ends.abandoned.empty() ? "" : h.ends.abandoned[0].second);
  const auto& w = h.ends.finished[0].window;
  EXPECT_EQ(kinds_and_names(w), (std::vector<std::string>{kNorm, kGemm, "event_record", "event_wait", "memset",
                                                          "event_record", "event_wait", kAct}));
  std::vector<uint32_t> streams;
  for (const auto& op : w.ops) streams.push_back(op.stream);
  EXPECT_EQ(streams, (std::vector<uint32_t>{0, 1, 1, 2, 2, 2, 0, 0}));  // b is index 1: its op came first
  EXPECT_EQ(w.streams, 3u);
  EXPECT_EQ(w.foreign_ops, 0u);
}

// What a joined stream did that a window cannot replay refuses the window, when the join comes
// (a graph launch on another stream; a launch that cannot be described) or at once when the
// stream is joined already; on a stream never joined it is foreign only.
TEST(CaptureWindow, AJoinedStreamsUnrecordableWorkRefusesTheWindow) {
  {
    Harness h("rms_norm", 0, "silu", 0);
    const CUstream s = stream(0x50), side = stream(0x60);
    h.launch(kNorm, s);
    FakeCall<cuGraphLaunch_params> g(cuGraphLaunch_params{reinterpret_cast<CUgraphExec>(0x900), side}, CUPTI_API_ENTER,
                                     h.next++);
    h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &g.cb);
    h.event_record(0xe1, side);
    EXPECT_TRUE(h.ends.abandoned.empty());
    h.wait_event(s, 0xe1);
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    const std::string& why = h.ends.abandoned[0].second;
    EXPECT_NE(why.find("cuStreamWaitEvent"), std::string::npos) << why;
    EXPECT_NE(why.find("0x60"), std::string::npos) << why;
    EXPECT_NE(why.find("CUDA graph"), std::string::npos) << why;
    EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Done);
    h.launch(kAct, s);
    EXPECT_TRUE(h.ends.finished.empty());
  }
  {
    Harness h("rms_norm", 0, "silu", 0);
    h.ops.refuse = kGemm;
    const CUstream s = stream(0x50), side = stream(0x60);
    h.launch(kNorm, s);
    h.event_record(0xe0, s);
    h.wait_event(side, 0xe0);
    h.event_record(0xe1, side);
    h.wait_event(s, 0xe1);  // joined before its undescribable launch
    EXPECT_TRUE(h.ends.abandoned.empty());
    h.launch(kGemm, side);
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].second.find("cannot be recorded"), std::string::npos) << h.ends.abandoned[0].second;
  }
  {
    // A stream of another CUDA context (another device): refused when joined.
    Harness h("rms_norm", 0, "silu", 0);
    const CUstream s = stream(0x50), side = stream(0x60);
    h.launch(kNorm, s);
    FakeLaunch l(kGemm, h.next++, side);
    l.cb.context = reinterpret_cast<CUcontext>(0xc0);
    h.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    h.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
    h.event_record(0xe1, side);
    h.wait_event(s, 0xe1);
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].second.find("another CUDA context"), std::string::npos) << h.ends.abandoned[0].second;
  }
  {
    Harness h("rms_norm", 0, "silu", 0);
    h.ops.refuse = kGemm;
    const CUstream s = stream(0x50), side = stream(0x60);
    h.launch(kNorm, s);
    h.launch(kGemm, side);  // never joined: foreign, no refusal
    h.launch(kAct, s);
    ASSERT_EQ(h.ends.finished.size(), 1u);
    EXPECT_EQ(h.ends.finished[0].window.foreign_ops, 1u);
    EXPECT_EQ(h.ends.finished[0].window.streams, 1u);
  }
}

// A host-to-device copy into tracked memory on the window's stream is one of its operations,
// its host bytes kept (written to window/op-NNNNNN.h2d at the end); into untracked memory it
// stays foreign.
TEST(CaptureWindow, HostToDeviceCopiesKeepTheirBytes) {
  Harness h("rms_norm", 0, "silu", 0);
  const CUstream s = stream(0x50);
  CUdeviceptr p = 0x7000;
  FakeCall<cuMemAlloc_v2_params> a(cuMemAlloc_v2_params{&p, 64}, CUPTI_API_EXIT, h.next++);
  h.call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a.cb);  // tracked before the window
  h.launch(kNorm, s);
  h.copy_h2d(0x7010, 16, s);
  h.copy_h2d(0x9000, 16, s);  // untracked: foreign
  h.launch(kAct, s);
  ASSERT_EQ(h.ends.finished.size(), 1u);
  const auto& w = h.ends.finished[0].window;
  EXPECT_EQ(kinds_and_names(w), (std::vector<std::string>{kNorm, "copy_h2d", kAct}));
  ASSERT_TRUE(w.ops[1].host_bytes);
  EXPECT_EQ(w.ops[1].host_bytes->size(), 16u);
  EXPECT_EQ(w.ops[1].dst, 0x7010u);
  EXPECT_EQ(w.ops[1].bytes, 16u);
  EXPECT_EQ(w.foreign_ops, 1u);
  EXPECT_NE(w.foreign_examples.at(0).find("untracked"), std::string::npos);
}

// The window's stream capturing a CUDA graph during the window: what is issued into the capture
// does not run now (it runs when the graph is launched), so it is no operation of the window
// and does not count towards its end.
TEST(CaptureWindow, WorkIssuedIntoAStreamCaptureIsNoOperation) {
  Harness h("rms_norm", 0, "silu", 0);
  const CUstream s = stream(0x50);
  h.launch(kNorm, s);
  h.driver.capturing.insert(s);
  h.launch(kGemm, s);
  h.launch(kAct, s);  // captured into the graph: not the window's end
  h.memset_async(0x7000, 0xab, 64, s);
  h.driver.capturing.clear();
  EXPECT_TRUE(h.ends.finished.empty());
  h.launch(kAct, s);
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(kinds_and_names(h.ends.finished[0].window), (std::vector<std::string>{kNorm, kAct}));
  EXPECT_EQ(h.ends.finished[0].window.foreign_ops, 0u);
}
