// A window bounded by an NVTX range (`kerncap window extract --range`, window_nvtx.hpp), driven
// by fake CUPTI NVTX and launch callbacks through the window recorder and the range window as
// window_mode.cpp wires them (the recorder first, then the range): which push opens the window,
// which launch begins it, which pop ends it (nested ranges, other threads, other domains), and
// the failures (no launch in the range, no NVTX at all, the application ending inside the
// range). Also the decoding of NVTX's parameter structs and the range name's matching. No GPU.
#include <gtest/gtest.h>

#include <generated_nvtx_meta.h>

#include <memory>
#include <thread>

#include "capture/events.hpp"
#include "capture/window_nvtx.hpp"
#include "capture/window_recorder.hpp"
#include "capture_fakes.hpp"
#include "common/error.hpp"
#include "format/window.hpp"

using namespace kerncap::capture;
using namespace kerncap::capture::testing;
using kerncap::format::WindowOp;

namespace {

CUstream nvtx_stream(uintptr_t v) { return reinterpret_cast<CUstream>(v); }

struct NvtxFakeOps : WindowOps {
  bool describe_kernel(CUpti_CallbackId, const CUpti_CallbackData&, const std::string& mangled, size_t index,
                       WindowOp* op, std::string*) override {
    op->kind = WindowOp::Kind::Kernel;
    op->mangled = mangled;
    op->image_hash = 0x100 + index;
    op->image_kind = "cubin";
    return true;
  }
};

struct NvtxFakeEnds : WindowEnds {
  std::vector<TargetLaunch> begun;
  std::vector<kerncap::format::Window> finished;
  std::vector<CUcontext> finished_context;
  std::vector<std::string> abandoned;
  bool begin(const TargetLaunch& t) override {
    begun.push_back(t);
    begun.back().entry = nullptr;  // not kept past the callback
    return true;
  }
  std::optional<std::vector<WindowChanged>> finish(uint32_t, const CUpti_CallbackData& last,
                                                   const std::function<kerncap::format::Window()>& w) override {
    finished.push_back(w());
    finished_context.push_back(last.context);
    return std::nullopt;
  }
  void abandon(uint32_t, const std::string& why) override { abandoned.push_back(why); }
  void observed(const kerncap::format::WindowLiveOut&, bool) override {}
};

// Distinct thread ids without threads: the ids of threads that ran and ended.
std::thread::id nvtx_other_thread() {
  std::thread::id id;
  std::thread t([&] { id = std::this_thread::get_id(); });
  t.join();
  return id;
}

struct RangeHarness {
  TempDir dir{"window_nvtx"};
  Config config;
  std::unique_ptr<Inventory> inventory;
  FakeQueries driver;
  NvtxFakeOps ops;
  NvtxFakeEnds ends;
  std::unique_ptr<WindowRecorder> recorder;
  std::unique_ptr<RangeWindow> range;
  std::thread::id main = std::this_thread::get_id();
  uint32_t next = 1;
  int opened = 0;

  RangeHarness(const char* name, uint64_t push, bool regex = false) {
    config.mode = Mode::Capture;
    config.output = dir.path().string();
    config.window_range = name;
    config.window_range_occurrence = push;
    config.regex = regex;
    config.closure_all = true;
    config.window_observe = 0;
    events_open(config.output);
    inventory = std::make_unique<Inventory>(config);
    recorder = std::make_unique<WindowRecorder>(config, *inventory, driver, ops, ends);
    range = std::make_unique<RangeWindow>(config, driver, *recorder, &RangeHarness::on_open);
    opens() = 0;
  }
  static int& opens() {
    static int n = 0;
    return n;
  }
  static void on_open() { ++opens(); }

  void nvtx(CUpti_CallbackId cbid, const void* params, std::thread::id t) {
    CUpti_NvtxData d{"nvtx", params, nullptr};
    range->on_nvtx(cbid, &d, t);
  }
  void push(const char* name, std::thread::id t) {
    nvtxRangePushA_params p{name};
    nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, &p, t);
  }
  void push(const char* name) { push(name, main); }
  void pop(std::thread::id t) {
    nvtxRangePop_params p{nullptr};
    nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &p, t);
  }
  void pop() { pop(main); }
  uint32_t launch(const char* symbol, CUstream s, std::thread::id t) {
    const uint32_t c = next++;
    FakeLaunch l(symbol, c, s);
    l.cb.context = reinterpret_cast<CUcontext>(0xC0);
    for (const bool enter : {true, false}) {  // entry() and exit() are one record, its site changed
      const CUpti_CallbackData* cb = enter ? l.entry() : l.exit();
      recorder->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, cb);
      range->on_driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, cb, t);
    }
    return c;
  }
  uint32_t launch(const char* symbol, CUstream s = nvtx_stream(7)) { return launch(symbol, s, main); }
  std::vector<std::string> names(const kerncap::format::Window& w) const {
    std::vector<std::string> out;
    for (const auto& op : w.ops) out.push_back(op.mangled);
    return out;
  }
};

TEST(WindowNvtx, DecodesPushesAndPops) {
  nvtxRangePushA_params a{"step"};
  NvtxCall c = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushA, &a);
  EXPECT_EQ(c.kind, NvtxCall::Kind::Push);
  EXPECT_EQ(c.message, "step");
  EXPECT_EQ(c.domain, nullptr);

  nvtxRangePushW_params w{L"st\u00e9p"};
  c = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushW, &w);
  EXPECT_EQ(c.message, "st\xc3\xa9p");

  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "block";
  nvtxRangePushEx_params ex{&attr};
  c = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushEx, &ex);
  EXPECT_EQ(c.kind, NvtxCall::Kind::Push);
  EXPECT_EQ(c.message, "block");

  // nvtx3's scoped_range: a domain's push and pop.
  auto* domain = reinterpret_cast<nvtxDomainHandle_t>(0xD0);
  nvtxDomainRangePushEx_params dex{domain, {&attr}};
  c = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &dex);
  EXPECT_EQ(c.domain, domain);
  EXPECT_EQ(c.message, "block");
  nvtxDomainRangePop_params dpop{domain};
  c = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxDomainRangePop, &dpop);
  EXPECT_EQ(c.kind, NvtxCall::Kind::Pop);
  EXPECT_EQ(c.domain, domain);

  // A registered string is not read (its text is not in the call); a too small attribute struct neither.
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  c = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushEx, &ex);
  EXPECT_TRUE(c.registered);
  EXPECT_EQ(c.message, "");
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.size = 4;
  c = decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushEx, &ex);
  EXPECT_EQ(c.message, "");

  // Null parameters, a null message and other NVTX calls are nothing.
  EXPECT_EQ(decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushA, nullptr).kind, NvtxCall::Kind::Other);
  nvtxRangePushA_params none{nullptr};
  EXPECT_EQ(decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushA, &none).message, "");
  nvtxMarkA_params mark{"step"};
  EXPECT_EQ(decode_nvtx_call(CUPTI_CBID_NVTX_nvtxMarkA, &mark).kind, NvtxCall::Kind::Other);

  // The application's text is bounded.
  const std::string huge(kMaxNvtxMessage + 100, 'x');
  nvtxRangePushA_params big{huge.c_str()};
  EXPECT_EQ(decode_nvtx_call(CUPTI_CBID_NVTX_nvtxRangePushA, &big).message.size(), kMaxNvtxMessage);
}

TEST(WindowNvtx, RangeNameMatching) {
  const NvtxRangeName step("step", false);
  EXPECT_TRUE(step.matches("step"));
  EXPECT_TRUE(step.matches("step, seq = 12"));  // emit_nvtx's suffix
  EXPECT_FALSE(step.matches("steps"));
  EXPECT_FALSE(step.matches("pre step"));
  EXPECT_FALSE(step.matches("step,"));
  EXPECT_FALSE(step.matches(""));
  const NvtxRangeName re("^aten::(addmm|mm)", true);
  EXPECT_TRUE(re.matches("aten::addmm, seq = 3"));
  EXPECT_FALSE(re.matches("aten::add"));
}

// nvtx_app.cu's shape: 4 iterations of a range "step" around 3 kernels; --range step@2.
TEST(WindowNvtx, TheNthRangeFromItsFirstLaunchToItsPop) {
  RangeHarness h("step", 2);
  h.launch("init");
  for (int it = 0; it < 4; ++it) {
    h.push("step");
    h.launch("k_a");
    h.launch("k_b");
    h.launch("k_c");
    h.pop();
  }
  ASSERT_EQ(h.ends.begun.size(), 1u);
  EXPECT_EQ(h.ends.begun[0].mangled, "k_a");
  EXPECT_EQ(h.ends.begun[0].launch_index, 7u);  // init and two iterations' 3 launches before it
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(h.names(h.ends.finished[0]), (std::vector<std::string>{"k_a", "k_b", "k_c"}));
  EXPECT_EQ(h.ends.finished_context[0], reinterpret_cast<CUcontext>(0xC0));
  EXPECT_EQ(h.ends.finished[0].foreign_ops, 0u);  // the last iteration's launches came after the window
  EXPECT_TRUE(h.ends.abandoned.empty());
  EXPECT_EQ(h.range->pushes_matched(), 3u);  // counted until the window closed
  EXPECT_EQ(RangeHarness::opens(), 1);
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Done);
  h.range->at_exit();
  h.recorder->at_exit();
  EXPECT_TRUE(h.ends.abandoned.empty());
}

TEST(WindowNvtx, NestedRangesOtherThreadsAndDomainsDoNotClose) {
  RangeHarness h("block", 0);
  const std::thread::id other = nvtx_other_thread();
  h.push("block, seq = 4");  // emit_nvtx style
  h.launch("k0", nvtx_stream(7), other);  // another thread's launch does not begin the window
  EXPECT_TRUE(h.ends.begun.empty());
  h.push("inner");
  h.push("block");  // a nested push of the same name: counted (push 1), not the window
  h.launch("k1");   // the window's first launch: the pushing thread's, after the push
  h.pop();          // block (nested)
  h.pop();          // inner
  h.pop(other);     // another thread's pop (its own stack is empty): nothing
  auto* domain = reinterpret_cast<nvtxDomainHandle_t>(0xD0);
  nvtxDomainRangePop_params dpop{domain};
  h.nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePop, &dpop, h.main);  // another domain's pop: nothing
  h.launch("k2", nvtx_stream(7), other);  // another thread, the window's stream: the stream's work
  h.launch("k3");
  EXPECT_TRUE(h.ends.finished.empty());
  h.pop();  // block: the window ends
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(h.names(h.ends.finished[0]), (std::vector<std::string>{"k1", "k2", "k3"}));
  EXPECT_EQ(h.range->pushes_matched(), 2u);
}

TEST(WindowNvtx, DomainRangesOpenAndCloseInTheirDomain) {
  RangeHarness h("layer", 0);
  auto* domain = reinterpret_cast<nvtxDomainHandle_t>(0xD0);
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "layer";
  nvtxDomainRangePushEx_params push{domain, {&attr}};
  h.nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &push, h.main);
  h.launch("k1");
  h.pop();  // the default domain's pop (none open there): nothing
  h.launch("k2");
  nvtxDomainRangePop_params pop{domain};
  h.nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePop, &pop, h.main);
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(h.names(h.ends.finished[0]), (std::vector<std::string>{"k1", "k2"}));
}

TEST(WindowNvtx, OtherStreamsInTheRangeAreNotTheWindowsOps) {
  RangeHarness h("step", 0);
  h.push("step");
  h.launch("k1", nvtx_stream(7));
  h.launch("side", nvtx_stream(9));
  h.launch("k2", nvtx_stream(7));
  h.pop();
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(h.names(h.ends.finished[0]), (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(h.ends.finished[0].foreign_ops, 1u);
}

TEST(WindowNvtx, ARangeWithoutLaunchesIsRefused) {
  RangeHarness h("step", 0);
  h.push("step");
  h.pop();
  ASSERT_EQ(h.ends.abandoned.size(), 1u);
  EXPECT_NE(h.ends.abandoned[0].find("popped before its thread launched any kernel"), std::string::npos)
      << h.ends.abandoned[0];
  h.push("step");
  h.launch("k1");
  h.pop();
  EXPECT_TRUE(h.ends.begun.empty());  // push 0 was the window: nothing more
  EXPECT_TRUE(h.ends.finished.empty());
}

TEST(WindowNvtx, ALaunchIntoAStreamCaptureDoesNotBegin) {
  RangeHarness h("step", 0);
  h.driver.capturing.insert(nvtx_stream(5));
  h.push("step");
  h.launch("captured", nvtx_stream(5));
  h.launch("k1");
  h.pop();
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(h.names(h.ends.finished[0]), (std::vector<std::string>{"k1"}));
}

TEST(WindowNvtx, SaysWhyNoWindowWasCaptured) {
  {
    RangeHarness h("step", 0);
    h.launch("k1");
    h.range->at_exit();
    h.recorder->at_exit();
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].find("no NVTX range reached kerncap"), std::string::npos);
    EXPECT_NE(h.ends.abandoned[0].find("NVTX_INJECTION64_PATH"), std::string::npos);
    EXPECT_NE(h.ends.abandoned[0].find("emit_nvtx"), std::string::npos);
  }
  {
    RangeHarness h("step", 3);
    for (int i = 0; i < 2; ++i) {
      h.push("step");
      h.launch("k");
      h.pop();
    }
    h.push("other");
    h.pop();
    h.range->at_exit();
    h.recorder->at_exit();
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].find("pushed 2 NVTX range(s) named 'step', and the window is push 3"),
              std::string::npos)
        << h.ends.abandoned[0];
  }
  {
    RangeHarness h("step", 0);
    h.push("step");
    h.launch("k1");
    h.launch("k2");
    h.range->at_exit();
    h.recorder->at_exit();
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].find("ended inside the NVTX range 'step' (push 0 from 0), before its pop: 2"),
              std::string::npos)
        << h.ends.abandoned[0];
    EXPECT_TRUE(h.ends.finished.empty());
  }
}

}  // namespace

namespace {

// window.json keeps a range window's kind: `range`, the user's NAME in `from`, the push in its
// dispatch; the title names it; a graph window cannot also be a range's.
TEST(WindowNvtx, WindowJsonKeepsTheRange) {
  kerncap::format::Window w;
  w.range = true;
  w.from = "step\n$(rm -rf x)`|";
  w.from_dispatch = 2;
  WindowOp op;
  op.kind = WindowOp::Kind::Kernel;
  op.mangled = "nvtx_scale";
  op.image_kind = "cubin";
  op.image_hash = 0x100;
  op.grid = {1, 1, 1};
  op.block = {1, 1, 1};
  w.ops.push_back(op);
  const nlohmann::json j = kerncap::format::to_json(w);
  EXPECT_EQ(j.at("range"), true);
  const kerncap::format::Window back = kerncap::format::window_from_json(j);
  EXPECT_TRUE(back.range);
  EXPECT_EQ(back.from, w.from);
  EXPECT_EQ(back.from_dispatch, 2u);
  EXPECT_EQ(kerncap::format::window_title(back), "range " + w.from + "@2");
  nlohmann::json both = j;
  both["graph"] = {{"launch", 0}, {"nodes", 1}};
  EXPECT_THROW(kerncap::format::window_from_json(both), kerncap::Error);
  nlohmann::json plain = j;
  plain.erase("range");
  EXPECT_FALSE(kerncap::format::window_from_json(plain).range);
}

}  // namespace
