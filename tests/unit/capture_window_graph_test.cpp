// A window of one CUDA graph launch (`kerncap window extract --graph`), driven by fake
// callbacks and fake graphs through the graph tracker, the window recorder and the watcher as
// window_mode.cpp wires them: which graph launch opens the window, the operations in the
// tracker's topological order (kernels, memsets, copies; the first kernel that waits for no
// memory operation first), the refusal of node kinds a window cannot replay, and the window
// the capture writes. No GPU: GraphQueries, WindowOps and WindowEnds are faked.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "capture/events.hpp"
#include "capture/graph_node_launch.hpp"
#include "capture/graph_tracker.hpp"
#include "capture/launch_info.hpp"
#include "capture/watcher.hpp"
#include "capture/window_graph.hpp"
#include "capture/window_recorder.hpp"
#include "common/error.hpp"
#include "capture_fakes.hpp"
#include "format/window.hpp"

using namespace kerncap::capture;
using namespace kerncap::capture::testing;
using kerncap::format::WindowOp;

namespace {

constexpr const char* kInit = "_Z4initPf";
constexpr const char* kExp = "_Z10exp_kernelPfi";
constexpr const char* kSum = "_Z13reduce_kernelPfS_i";
constexpr CUdeviceptr kBuf = 0x70000;  // one tracked allocation of 1 MiB

template <typename T>
T handle(uintptr_t v) {
  return reinterpret_cast<T>(v);
}

GraphNode gkernel(uintptr_t source, uint64_t id, const char* mangled, std::vector<size_t> deps = {}) {
  GraphNode n;
  n.source = handle<CUgraphNode>(source);
  n.id = id;
  n.type = CU_GRAPH_NODE_TYPE_KERNEL;
  n.deps = std::move(deps);
  GraphKernel k;
  k.f = handle<CUfunction>(source + 0x2000);
  k.mangled = mangled;
  k.grid = {static_cast<uint32_t>(id), 1, 1};
  k.slots = {{0, 8}};
  k.params.assign(8, 0);
  std::memcpy(k.params.data(), &kBuf, 8);
  n.kernel = k;
  return n;
}

GraphNode gplain(uintptr_t source, uint64_t id, CUgraphNodeType type, std::vector<size_t> deps = {}) {
  GraphNode n;
  n.source = handle<CUgraphNode>(source);
  n.id = id;
  n.type = type;
  n.deps = std::move(deps);
  return n;
}

GraphNode gmemset(uintptr_t source, uint64_t id, CUdeviceptr dst, size_t n, std::vector<size_t> deps = {}) {
  GraphNode g = gplain(source, id, CU_GRAPH_NODE_TYPE_MEMSET, std::move(deps));
  CUDA_MEMSET_NODE_PARAMS p{};
  p.dst = dst;
  p.value = 0x3f800000;
  p.elementSize = 4;
  p.width = n;
  p.height = 1;
  g.memset = p;
  return g;
}

GraphNode gcopy(uintptr_t source, uint64_t id, CUmemorytype src_type, uint64_t src, CUdeviceptr dst, size_t bytes,
                std::vector<size_t> deps = {}) {
  GraphNode g = gplain(source, id, CU_GRAPH_NODE_TYPE_MEMCPY, std::move(deps));
  CUDA_MEMCPY3D c{};
  c.srcMemoryType = src_type;
  if (src_type == CU_MEMORYTYPE_HOST) c.srcHost = reinterpret_cast<const void*>(src);
  else c.srcDevice = src;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = dst;
  c.WidthInBytes = bytes;
  c.Height = 1;
  c.Depth = 1;
  g.memcpy = c;
  return g;
}

struct WgQueries : GraphQueries {
  std::map<CUgraph, std::vector<GraphNode>> graphs;
  uintptr_t next_copy = 0x9000;
  bool read_graph(CUgraph graph, GraphExec* out, std::string* why) override {
    auto it = graphs.find(graph);
    if (it == graphs.end()) {
      *why = "unknown graph";
      return false;
    }
    out->nodes = it->second;
    out->copy = handle<CUgraph>(next_copy++);
    return true;
  }
  bool read_kernel(const KernelNodeView&, GraphKernel*, std::string* why) override {
    *why = "not faked";
    return false;
  }
  void release(CUgraph) override {}
};

struct WgOps : WindowOps {
  std::vector<std::string> described;
  bool describe_kernel(CUpti_CallbackId cbid, const CUpti_CallbackData& cb, const std::string& mangled, size_t index,
                       WindowOp* op, std::string*) override {
    described.push_back(mangled);
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {  // an eager launch of a FROM..TO window
      op->kind = WindowOp::Kind::Kernel;
      op->mangled = mangled;
      op->image_hash = 0x100 + index;
      op->image_kind = "cubin";
      return true;
    }
    EXPECT_EQ(cbid, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
    // The node as a launch: its shape and parameter bytes (GraphNodeLaunch), never launched.
    const auto* p = static_cast<const cuLaunchKernelEx_params*>(cb.functionParams);
    op->kind = WindowOp::Kind::Kernel;
    op->mangled = mangled;
    op->grid = {p->config->gridDimX, p->config->gridDimY, p->config->gridDimZ};
    uint64_t word = 0;
    std::memcpy(&word, p->kernelParams[0], 8);
    op->image_hash = word == kBuf ? 0x100 + index : 0;
    op->image_kind = "cubin";
    op->params_size = 8;
    return true;
  }
};

struct WgEnds : WindowEnds {
  std::vector<std::string> begun;  // the first kernel, as the capture's own launch
  std::vector<uint32_t> begun_correlation;
  std::vector<kerncap::format::Window> finished;
  std::vector<std::string> abandoned;
  bool begin(const TargetLaunch& t) override {
    begun.push_back(t.mangled);
    begun_correlation.push_back(t.entry->correlationId);
    return true;
  }
  std::optional<std::vector<WindowChanged>> changed;  // as published (the observation's regions)
  std::optional<std::vector<WindowChanged>> finish(uint32_t, const CUpti_CallbackData&,
                                                   const std::function<kerncap::format::Window()>& w) override {
    finished.push_back(w());
    return changed;
  }
  void abandon(uint32_t, const std::string& why) override { abandoned.push_back(why); }
  std::vector<kerncap::format::WindowLiveOut> observed_results;
  void observed(const kerncap::format::WindowLiveOut& r, bool) override { observed_results.push_back(r); }
};

struct GraphWindowHarness {
  TempDir dir{"window-graph"};
  Config config;
  std::unique_ptr<Inventory> inventory;
  FakeQueries driver;
  WgQueries graph_queries;
  WgOps ops;
  WgEnds ends;
  std::unique_ptr<GraphTracker> tracker;
  std::unique_ptr<WindowRecorder> recorder;
  std::unique_ptr<LaunchWatcher> watcher;
  uint32_t next = 1;

  GraphWindowHarness(uint64_t launch, std::string pattern) {
    config.window_graph = true;
    config.window_graph_launch = launch;
    config.window_graph_kernel = std::move(pattern);
    init();
  }
  // A FROM..TO window (the graph tracker wired in as window_mode.cpp does for every window).
  GraphWindowHarness(const char* from, const char* to, uint64_t to_dispatch, uint64_t observe = 0) {
    config.kernel = from;
    config.window_end = to;
    config.window_end_dispatch = to_dispatch;
    config.window_observe = observe;
    init();
  }
  void init() {
    config.mode = Mode::Capture;
    config.output = dir.path().string();
    config.closure_all = true;
    events_open(config.output);
    inventory = std::make_unique<Inventory>(config);
    tracker = std::make_unique<GraphTracker>(graph_queries);
    recorder = std::make_unique<WindowRecorder>(config, *inventory, driver, ops, ends);
    recorder->watch_graphs(*tracker);
    watcher = std::make_unique<LaunchWatcher>(config, *inventory, driver, *recorder);
    CUdeviceptr p = kBuf;
    FakeCall<cuMemAlloc_v2_params> a(cuMemAlloc_v2_params{&p, 1 << 20}, CUPTI_API_EXIT, next++);
    call(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &a.cb);
  }
  // As window_mode.cpp's trampoline: the tracker, then the recorder, then the watcher.
  void call(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
    if (tracker->on_driver_api(cbid, cb)) return;
    recorder->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb);
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb);
  }
  void instantiate(CUgraphExec exec, CUgraph graph) {
    CUgraphExec out = exec;
    FakeCall<cuGraphInstantiateWithFlags_params> c({&out, graph, 0});
    call(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &c.cb);
  }
  uint32_t launch(const char* symbol, CUstream s) {
    const uint32_t c = next++;
    FakeLaunch l(symbol, c, s);
    call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
    return c;
  }
  uint32_t graph_launch(CUgraphExec exec, CUstream stream) {
    const uint32_t c = next++;
    FakeCall<cuGraphLaunch_params> l({exec, stream}, CUPTI_API_ENTER, c);
    call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &l.cb);
    l.cb.callbackSite = CUPTI_API_EXIT;
    call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &l.cb);
    return c;
  }
};

std::vector<std::string> op_names(const kerncap::format::Window& w) {
  std::vector<std::string> out;
  for (const auto& op : w.ops) out.push_back(op.kind == WindowOp::Kind::Kernel ? op.mangled : to_string(op.kind));
  return out;
}

bool tracked_buf(uint64_t addr, uint64_t bytes) { return addr >= kBuf && addr - kBuf + bytes <= (1u << 20); }

}  // namespace

// The nodes come in any order from the driver; the window has them dependencies first (the
// tracker's one order), each kernel node described as a launch, memsets and copies made here.
TEST(CaptureWindowGraph, TheNthGraphLaunchIsTheWindowInTopologicalOrder) {
  GraphWindowHarness h(1, "exp_kernel");
  const CUgraph graph = handle<CUgraph>(0x500), other = handle<CUgraph>(0x600);
  // init -> memset -> exp -> copy -> sum, given out of order.
  h.graph_queries.graphs[graph] = {gkernel(0x50, 5, kSum, {3}), gcopy(0x40, 4, CU_MEMORYTYPE_DEVICE, kBuf, kBuf + 4096, 256, {4}),
                                   gkernel(0x10, 1, kInit), gkernel(0x30, 3, kExp, {4, 2}),
                                   gmemset(0x20, 2, kBuf + 8192, 64, {2}), gplain(0x60, 6, CU_GRAPH_NODE_TYPE_EMPTY, {0})};
  h.graph_queries.graphs[other] = {gkernel(0x70, 1, kInit)};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1), no_exp = handle<CUgraphExec>(0xe2);
  h.instantiate(exec, graph);
  h.instantiate(no_exp, other);
  const CUstream s = handle<CUstream>(0x77);
  h.graph_launch(exec, s);    // launch 0 of the graphs holding exp_kernel
  h.graph_launch(no_exp, s);  // no exp_kernel: not counted
  EXPECT_TRUE(h.ends.begun.empty());
  const uint32_t c = h.graph_launch(exec, s);  // launch 1: the window
  ASSERT_EQ(h.ends.begun, std::vector<std::string>{kInit});
  EXPECT_EQ(h.ends.begun_correlation, std::vector<uint32_t>{c});
  ASSERT_EQ(h.ends.finished.size(), 1u) << (h.ends.abandoned.empty() ? "" : h.ends.abandoned[0]);
  const kerncap::format::Window& w = h.ends.finished[0];
  EXPECT_EQ(op_names(w), (std::vector<std::string>{kInit, "memset", kExp, "copy_d2d", kSum}));
  EXPECT_EQ(h.ops.described, (std::vector<std::string>{kInit, kExp, kSum}));
  EXPECT_EQ(w.ops[0].grid[0], 1u);  // the node's own shape and parameter bytes reached WindowOps
  EXPECT_EQ(w.ops[0].image_hash, 0x100u);
  EXPECT_EQ(w.ops[1].dst, kBuf + 8192);
  EXPECT_EQ(w.ops[1].value, 0x3f800000u);
  EXPECT_EQ(w.ops[1].element_size, 4u);
  EXPECT_EQ(w.ops[1].width, 64u);
  EXPECT_EQ(w.ops[3].src, kBuf);
  EXPECT_EQ(w.ops[3].dst, kBuf + 4096);
  EXPECT_EQ(w.ops[3].bytes, 256u);
  EXPECT_EQ(w.ops[2].launch_index, 1u);  // counted in node order from the graph's first kernel
  ASSERT_TRUE(w.graph);
  EXPECT_EQ(w.graph->launch, 1u);
  EXPECT_EQ(w.graph->nodes, 6u);
  EXPECT_EQ(w.from, "exp_kernel");
  EXPECT_EQ(w.stream, 0x77u);
  EXPECT_EQ(w.foreign_ops, 0u);
  EXPECT_TRUE(h.ends.abandoned.empty());
  EXPECT_EQ(h.recorder->state(), WindowRecorder::State::Done);
  // Later launches begin nothing.
  h.graph_launch(exec, s);
  EXPECT_EQ(h.ends.begun.size(), 1u);

  // The window.json the capture writes: the graph, and the operations as recorded, read back strictly.
  const kerncap::format::Window back = kerncap::format::window_from_json(nlohmann::json::parse(to_json(w).dump()));
  ASSERT_TRUE(back.graph);
  EXPECT_EQ(back.graph->launch, 1u);
  EXPECT_EQ(back.graph->nodes, 6u);
  EXPECT_EQ(op_names(back), op_names(w));
  EXPECT_EQ(to_json(w)["graph"], (nlohmann::json{{"launch", 1}, {"nodes", 6}}));
}

TEST(CaptureWindowGraph, AnyGraphCountsWithoutAPatternAndKernelRecordsMatchByName) {
  GraphWindowHarness h(0, "");
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gkernel(0x20, 2, kSum, {0})};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  // Kernel records of a graph share the launch's correlation id; they arrive in any order.
  const uint32_t c = h.next;
  FakeCall<cuGraphLaunch_params> l({exec, nullptr}, CUPTI_API_ENTER, h.next++);
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &l.cb);
  h.recorder->on_kernel_record(c, kSum, 2000, 2500);
  h.recorder->on_kernel_record(c, kExp, 1000, 1400);
  l.cb.callbackSite = CUPTI_API_EXIT;
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &l.cb);
  ASSERT_EQ(h.ends.finished.size(), 1u);
  const kerncap::format::Window& w = h.ends.finished[0];
  EXPECT_EQ(op_names(w), (std::vector<std::string>{kExp, kSum}));
  ASSERT_TRUE(w.ops[0].in_app_ns && w.ops[1].in_app_ns);
  EXPECT_EQ(*w.ops[0].in_app_ns, 400u);
  EXPECT_EQ(*w.ops[1].in_app_ns, 500u);
  EXPECT_EQ(w.in_app_window_ns, 1500u);
  EXPECT_EQ(w.in_app_kernels_ns, 900u);
}

TEST(CaptureWindowGraph, NodeKindsAWindowCannotReplayAreRefusedByName) {
  GraphWindowHarness h(0, "");
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gplain(0x20, 2, CU_GRAPH_NODE_TYPE_HOST, {0})};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  h.graph_launch(exec, nullptr);
  EXPECT_TRUE(h.ends.begun.empty());  // refused before BEFORE
  EXPECT_TRUE(h.ends.finished.empty());
  ASSERT_EQ(h.ends.abandoned.size(), 1u);
  EXPECT_NE(h.ends.abandoned[0].find("node 1 of 2 (host callback)"), std::string::npos) << h.ends.abandoned[0];
  EXPECT_NE(h.ends.abandoned[0].find("kernel, memset and copy nodes only"), std::string::npos);

  const auto refused = [](std::vector<GraphNode> nodes) {
    GraphExec g;
    g.nodes = std::move(nodes);
    EXPECT_TRUE(order_topologically(g.nodes));
    std::string why;
    EXPECT_FALSE(plan_graph_window(g, tracked_buf, 1 << 20, &why));
    return why;
  };
  for (CUgraphNodeType t : {CU_GRAPH_NODE_TYPE_GRAPH, CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_MEM_FREE,
                            CU_GRAPH_NODE_TYPE_CONDITIONAL, CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT,
                            CU_GRAPH_NODE_TYPE_BATCH_MEM_OP}) {
    const std::string why = refused({gkernel(0x10, 1, kExp), gplain(0x20, 2, t, {0})});
    EXPECT_NE(why.find(std::string("(") + node_type_name(t) + ")"), std::string::npos) << why;
  }
  // A memset outside the tracked memory, a copy from untracked device memory, an array copy,
  // a pitched 2D copy, a graph without kernels, one whose every kernel waits for a memset.
  EXPECT_NE(refused({gkernel(0x10, 1, kExp), gmemset(0x20, 2, 0x10, 64)}).find("outside the memory kerncap tracks"),
            std::string::npos);
  EXPECT_NE(refused({gkernel(0x10, 1, kExp), gcopy(0x20, 2, CU_MEMORYTYPE_DEVICE, 0x10, kBuf, 64)}).find("reads 64 bytes"),
            std::string::npos);
  GraphNode arr = gcopy(0x20, 2, CU_MEMORYTYPE_DEVICE, kBuf, kBuf + 64, 64);
  arr.memcpy->srcMemoryType = CU_MEMORYTYPE_ARRAY;
  EXPECT_NE(refused({gkernel(0x10, 1, kExp), arr}).find("CUDA array"), std::string::npos);
  GraphNode pitched = gcopy(0x20, 2, CU_MEMORYTYPE_DEVICE, kBuf, kBuf + 4096, 64);
  pitched.memcpy->Height = 4;
  pitched.memcpy->srcPitch = 128;
  pitched.memcpy->dstPitch = 128;
  EXPECT_NE(refused({gkernel(0x10, 1, kExp), pitched}).find("pitched"), std::string::npos);
  EXPECT_NE(refused({gmemset(0x20, 2, kBuf, 64)}).find("no kernel node"), std::string::npos);
  GraphNode rows = gmemset(0x20, 2, kBuf, 64);
  rows.memset->height = 4;
  rows.memset->pitch = 1024;
  EXPECT_NE(refused({gkernel(0x10, 1, kExp), rows}).find("2D memset of 4 rows 1024 bytes apart"), std::string::npos);
  GraphExec stale;
  stale.nodes = {gkernel(0x10, 1, kExp)};
  stale.stale = "the application changed a memcpy node";
  std::string why;
  EXPECT_FALSE(plan_graph_window(stale, tracked_buf, 1 << 20, &why));
  EXPECT_NE(why.find("changed a memcpy node"), std::string::npos);
}

TEST(CaptureWindowGraph, PlanSkipsWhatDoesNotRunAndKeepsHostBytes) {
  GraphExec g;
  const std::vector<uint8_t> host = {1, 2, 3, 4, 5, 6, 7, 8};
  GraphNode disabled = gkernel(0x30, 3, kSum, {1});
  disabled.enabled = false;
  GraphNode to_host = gcopy(0x50, 5, CU_MEMORYTYPE_DEVICE, kBuf, 0, 8, {1});
  to_host.memcpy->dstMemoryType = CU_MEMORYTYPE_HOST;
  // A memset first (it stays first: the order is the tracker's), a kernel, an H2D copy with an
  // offset, an event record, a disabled kernel and a copy to the host (nothing on the device).
  g.nodes = {gmemset(0x10, 1, kBuf, 16), gkernel(0x20, 2, kExp),
             gcopy(0x40, 4, CU_MEMORYTYPE_HOST, reinterpret_cast<uint64_t>(host.data()), kBuf + 64, 4, {1}), disabled,
             gplain(0x60, 6, CU_GRAPH_NODE_TYPE_EVENT_RECORD, {1}), to_host};
  g.nodes[2].memcpy->srcXInBytes = 2;
  ASSERT_TRUE(order_topologically(g.nodes));
  std::string why;
  const auto steps = plan_graph_window(g, tracked_buf, 1 << 20, &why);
  ASSERT_TRUE(steps) << why;
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[0].op->kind, WindowOp::Kind::Memset);
  EXPECT_TRUE((*steps)[1].kernel);
  EXPECT_EQ(g.nodes[(*steps)[1].node].kernel->mangled, kExp);
  // Rows without gaps are one run.
  GraphExec flat;
  flat.nodes = {gkernel(0x10, 1, kExp), gmemset(0x20, 2, kBuf, 64, {0})};
  flat.nodes[1].memset->height = 3;
  flat.nodes[1].memset->pitch = 256;
  const auto flat_steps = plan_graph_window(flat, tracked_buf, 0, &why);
  ASSERT_TRUE(flat_steps) << why;
  EXPECT_EQ((*flat_steps)[1].op->width, 192u);
  EXPECT_EQ((*flat_steps)[1].op->height, 1u);
  const WindowOp& h2d = *(*steps)[2].op;
  EXPECT_EQ(h2d.kind, WindowOp::Kind::CopyH2D);
  EXPECT_EQ(h2d.dst, kBuf + 64);
  ASSERT_TRUE(h2d.host_bytes);
  EXPECT_EQ(*h2d.host_bytes, (std::vector<uint8_t>{3, 4, 5, 6}));
  // The host bytes a window keeps are bounded.
  EXPECT_FALSE(plan_graph_window(g, tracked_buf, 2, &why));
  EXPECT_NE(why.find("beyond the 2 bytes"), std::string::npos) << why;
}

TEST(CaptureWindowGraph, AGraphNeverLaunchedEnoughIsReportedAtExit) {
  GraphWindowHarness h(3, "exp_kernel");
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp)};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  h.graph_launch(exec, nullptr);
  h.graph_launch(handle<CUgraphExec>(0xbad), nullptr);  // never seen instantiated
  h.recorder->at_exit();
  ASSERT_EQ(h.ends.abandoned.size(), 1u);
  EXPECT_NE(h.ends.abandoned[0].find("made 1 launches of graphs holding a kernel matching 'exp_kernel'"),
            std::string::npos)
      << h.ends.abandoned[0];
  EXPECT_NE(h.ends.abandoned[0].find("did not see instantiated"), std::string::npos);
}

// A stream capture that begins with a copy (new inputs) gives a graph whose first node is not a
// kernel: the window begins with that copy, and its first kernel is the capture's own launch.
TEST(CaptureWindowGraph, AGraphMayBeginWithACopyAndItsFirstKernelIsTheCapturesLaunch) {
  GraphWindowHarness h(0, "square");
  static const float host[4] = {1, 2, 3, 4};
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gcopy(0x10, 1, CU_MEMORYTYPE_HOST, reinterpret_cast<uint64_t>(host), kBuf, 16),
                                   gkernel(0x20, 2, "_Z6squarePfPKfi", {0}), gmemset(0x30, 3, kBuf + 64, 4, {1})};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  h.graph_launch(exec, nullptr);
  ASSERT_EQ(h.ends.begun, std::vector<std::string>{"_Z6squarePfPKfi"});
  ASSERT_EQ(h.ends.finished.size(), 1u);
  const kerncap::format::Window& w = h.ends.finished[0];
  EXPECT_EQ(op_names(w), (std::vector<std::string>{"copy_h2d", "_Z6squarePfPKfi", "memset"}));
  ASSERT_TRUE(w.ops[0].host_bytes);
  EXPECT_EQ(w.ops[0].host_bytes->size(), 16u);
  // The strict reader takes a graph window that begins with a copy, and no other window.
  nlohmann::json j = to_json(w);
  EXPECT_EQ(kerncap::format::window_from_json(j).ops.size(), 3u);
  j.erase("graph");
  EXPECT_THROW(kerncap::format::window_from_json(j), kerncap::Error);
  j = to_json(w);
  j["ops"].erase(1);
  EXPECT_THROW(kerncap::format::window_from_json(j), kerncap::Error);  // no kernel at all
}

// A kernel node as the launch the capture code decodes (graph_node_launch.hpp, shared with the
// one-kernel graph capture): function, shape, stream, its own copy of the parameter bytes,
// attributes, and the graph launch's context and correlation id.
TEST(CaptureWindowGraph, AKernelNodeDecodesAsALaunch) {
  GraphKernel k = gkernel(0x10, 3, kExp).kernel.value();
  k.grid = {4, 2, 1};
  k.block = {128, 1, 1};
  k.shared_mem = 256;
  CUlaunchAttribute a{};
  a.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  a.value.priority = 1;
  k.attrs = {a};
  CUpti_CallbackData like{};
  like.correlationId = 42;
  like.context = handle<CUcontext>(0xc0);
  const GraphNodeLaunch l(k, handle<CUstream>(0x77), like);
  EXPECT_EQ(l.entry.correlationId, 42u);
  EXPECT_EQ(l.entry.context, handle<CUcontext>(0xc0));
  EXPECT_EQ(l.entry.callbackSite, CUPTI_API_ENTER);
  LaunchArgs args;
  ASSERT_TRUE(decode_launch(GraphNodeLaunch::kCbid, l.entry.functionParams, &args));
  EXPECT_EQ(args.f, k.f);
  EXPECT_EQ(args.grid, (std::array<uint32_t, 3>{4, 2, 1}));
  EXPECT_EQ(args.block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(args.shared_mem, 256u);
  EXPECT_EQ(args.stream, handle<CUstream>(0x77));
  ASSERT_NE(args.kernel_params, nullptr);
  uint64_t word = 0;
  std::memcpy(&word, args.kernel_params[0], 8);
  EXPECT_EQ(word, kBuf);
  EXPECT_NE(args.kernel_params[0], static_cast<const void*>(k.params.data()));  // its own copy
  ASSERT_NE(args.config, nullptr);
  ASSERT_EQ(args.config->numAttrs, 1u);
  EXPECT_EQ(args.config->attrs[0].id, CU_LAUNCH_ATTRIBUTE_PRIORITY);
}

// What does not count: a launch on a stream being captured (the graph does not run then), a
// graph whose only matching kernel node is disabled, and kernel launches outside graphs.
TEST(CaptureWindowGraph, LaunchesThatDoNotRunOrDoNotMatchAreNotCounted) {
  GraphWindowHarness h(0, "exp_kernel");
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gkernel(0x20, 2, kSum, {0})};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  const CUstream capturing = handle<CUstream>(0x99), s = handle<CUstream>(0x77);
  h.driver.capturing.insert(capturing);
  h.graph_launch(exec, capturing);
  {
    FakeLaunch l(kExp, h.next++, s);  // the same kernel launched outside a graph
    h.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    h.call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  }
  // exp's node disabled on the executable: the graph holds no enabled matching kernel.
  FakeCall<cuGraphNodeSetEnabled_params> off({exec, handle<CUgraphNode>(0x10), 0});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &off.cb);
  h.graph_launch(exec, s);
  EXPECT_TRUE(h.ends.begun.empty());
  FakeCall<cuGraphNodeSetEnabled_params> on({exec, handle<CUgraphNode>(0x10), 1});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &on.cb);
  h.graph_launch(exec, s);  // launch 0 of the graphs holding exp_kernel
  ASSERT_EQ(h.ends.finished.size(), 1u);
  EXPECT_EQ(op_names(h.ends.finished[0]), (std::vector<std::string>{kExp, kSum}));
}

// ---- A CUDA graph launched inside a FROM..TO window ----
constexpr const char* kPre = "_Z3prePf";
constexpr const char* kPost = "_Z4postPf";

// The window's stream launches a graph between its eager kernels (a torch.cuda.CUDAGraph replay
// between eager ops): the graph's nodes are the window's operations in the tracker's order, its
// kernels' in-app times matched by name among the records of the graph launch's correlation id.
TEST(CaptureWindowGraph, AGraphLaunchedInsideAWindowIsRecordedAsItsNodes) {
  GraphWindowHarness h(kPre, kPost, 0);
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gmemset(0x20, 2, kBuf + 64, 16, {0}),
                                   gkernel(0x30, 3, kSum, {1})};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  const CUstream s = handle<CUstream>(0x77);
  const uint32_t pre = h.launch(kPre, s);
  const uint32_t g = h.graph_launch(exec, s);
  h.recorder->on_kernel_record(g, kSum, 3000, 3300);
  h.recorder->on_kernel_record(g, kExp, 2000, 2200);
  h.recorder->on_kernel_record(pre, kPre, 1000, 1100);
  h.launch(kPost, s);
  ASSERT_EQ(h.ends.finished.size(), 1u) << (h.ends.abandoned.empty() ? "" : h.ends.abandoned[0]);
  const kerncap::format::Window& w = h.ends.finished[0];
  EXPECT_EQ(op_names(w), (std::vector<std::string>{kPre, kExp, "memset", kSum, kPost}));
  EXPECT_EQ(w.foreign_ops, 0u);
  EXPECT_FALSE(w.graph);  // a FROM..TO window, not a graph launch's
  EXPECT_EQ(w.ops[2].dst, kBuf + 64);
  ASSERT_TRUE(w.ops[1].in_app_ns && w.ops[3].in_app_ns);
  EXPECT_EQ(*w.ops[1].in_app_ns, 200u);
  EXPECT_EQ(*w.ops[3].in_app_ns, 300u);
  // The strict reader takes it back.
  EXPECT_EQ(op_names(kerncap::format::window_from_json(nlohmann::json::parse(to_json(w).dump()))), op_names(w));
}

// The window's end may be the graph's last operation (it ends at the graph launch's exit), never
// a node with more of the graph after it.
TEST(CaptureWindowGraph, AWindowEndsWithAWholeGraphLaunchOrIsRefused) {
  const CUgraph graph = handle<CUgraph>(0x500);
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  const CUstream s = handle<CUstream>(0x77);
  {
    GraphWindowHarness h(kPre, "reduce_kernel", 0);
    h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gkernel(0x30, 3, kSum, {0})};
    h.instantiate(exec, graph);
    h.launch(kPre, s);
    h.graph_launch(exec, s);
    ASSERT_EQ(h.ends.finished.size(), 1u) << (h.ends.abandoned.empty() ? "" : h.ends.abandoned[0]);
    EXPECT_EQ(op_names(h.ends.finished[0]), (std::vector<std::string>{kPre, kExp, kSum}));
  }
  {
    GraphWindowHarness h(kPre, "exp_kernel", 0);
    h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gkernel(0x30, 3, kSum, {0})};
    h.instantiate(exec, graph);
    h.launch(kPre, s);
    h.graph_launch(exec, s);
    h.launch(kPost, s);
    EXPECT_TRUE(h.ends.finished.empty());
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].find("a window ends with a whole graph launch"), std::string::npos)
        << h.ends.abandoned[0];
    EXPECT_NE(h.ends.abandoned[0].find("1 more operation(s)"), std::string::npos) << h.ends.abandoned[0];
  }
}

// Never a window silently without a graph's work: a graph kerncap did not see instantiated, or
// one with a node a window cannot replay, refuses it; a graph on another stream is foreign, as
// any other stream's work is.
TEST(CaptureWindowGraph, AGraphInsideAWindowThatCannotBeRecordedRefusesIt) {
  const CUgraph graph = handle<CUgraph>(0x500);
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  const CUstream s = handle<CUstream>(0x77), other = handle<CUstream>(0x88);
  {
    GraphWindowHarness h(kPre, kPost, 0);
    h.launch(kPre, s);
    h.graph_launch(handle<CUgraphExec>(0xbad), s);
    h.launch(kPost, s);
    EXPECT_TRUE(h.ends.finished.empty());
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].find("did not see instantiated"), std::string::npos) << h.ends.abandoned[0];
  }
  {
    GraphWindowHarness h(kPre, kPost, 0);
    h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gplain(0x20, 2, CU_GRAPH_NODE_TYPE_HOST, {0})};
    h.instantiate(exec, graph);
    h.launch(kPre, s);
    h.graph_launch(exec, s);
    h.launch(kPost, s);
    EXPECT_TRUE(h.ends.finished.empty());
    ASSERT_EQ(h.ends.abandoned.size(), 1u);
    EXPECT_NE(h.ends.abandoned[0].find("node 1 of 2 (host callback)"), std::string::npos) << h.ends.abandoned[0];
    EXPECT_NE(h.ends.abandoned[0].find("after its operation 0"), std::string::npos) << h.ends.abandoned[0];
  }
  {
    GraphWindowHarness h(kPre, kPost, 0);
    h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp)};
    h.instantiate(exec, graph);
    h.launch(kPre, s);
    h.graph_launch(exec, other);
    h.driver.capturing.insert(s);
    h.graph_launch(exec, s);  // on a capturing stream: it does not run now
    h.driver.capturing.clear();
    h.launch(kPost, s);
    ASSERT_EQ(h.ends.finished.size(), 1u) << (h.ends.abandoned.empty() ? "" : h.ends.abandoned[0]);
    EXPECT_EQ(op_names(h.ends.finished[0]), (std::vector<std::string>{kPre, kPost}));
    EXPECT_EQ(h.ends.finished[0].foreign_ops, 1u);
    EXPECT_EQ(h.ends.finished[0].foreign_examples, std::vector<std::string>{"a CUDA graph launch on another stream"});
  }
}

// After the window the observation looks into a graph launch's nodes: a kernel node's pointer
// reads a region, a memset node overwrites one (dead) — no longer "possibly read by a graph".
TEST(CaptureWindowGraph, TheObservationAfterAWindowLooksIntoGraphLaunches) {
  GraphWindowHarness h(kPre, kPre, 0, 8);
  // Two regions the window changed: kBuf (a graph kernel's parameter points at it) and
  // kBuf + 0x10000 (a memset node overwrites it first).
  WindowChanged read{1, kBuf, 0x1000, 0, 0x1000};
  WindowChanged dead{2, kBuf + 0x10000, 0x1000, 0, 0x1000};
  h.ends.changed = std::vector<WindowChanged>{read, dead};
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gmemset(0x20, 2, kBuf + 0x10000, 0x400), gkernel(0x10, 1, kExp, {0})};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  const CUstream s = handle<CUstream>(0x77);
  h.launch(kPre, s);  // the window: one launch
  ASSERT_EQ(h.ends.finished.size(), 1u);
  h.graph_launch(exec, s);
  h.recorder->at_exit();
  ASSERT_EQ(h.ends.observed_results.size(), 1u);
  const auto& r = h.ends.observed_results[0];
  ASSERT_EQ(r.regions.size(), 2u);
  const auto* a = r.find(1);
  const auto* b = r.find(2);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->read) << a->evidence;
  EXPECT_TRUE(a->reads_complete);
  EXPECT_FALSE(b->read) << b->evidence;
  EXPECT_NE(b->evidence.find("memset node"), std::string::npos) << b->evidence;
  EXPECT_EQ(r.launches_observed, 1u);
}

// FROM matching only kernel nodes of graph launches: a FROM..TO window never begins inside a
// graph, and says so at exit, naming --graph.
TEST(CaptureWindowGraph, AFromInsideAGraphIsNamedAtExit) {
  GraphWindowHarness h("exp_kernel", kPost, 0);
  const CUgraph graph = handle<CUgraph>(0x500);
  h.graph_queries.graphs[graph] = {gkernel(0x10, 1, kExp), gkernel(0x30, 3, kSum, {0})};
  const CUgraphExec exec = handle<CUgraphExec>(0xe1);
  h.instantiate(exec, graph);
  const CUstream s = handle<CUstream>(0x77);
  h.graph_launch(exec, s);
  h.graph_launch(exec, s);
  h.launch(kPost, s);
  ::testing::internal::CaptureStderr();
  h.recorder->at_exit();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(h.ends.begun.empty());
  EXPECT_NE(err.find("matched kernel nodes of 2 CUDA graph launch(es)"), std::string::npos) << err;
  EXPECT_NE(err.find("--graph 'exp_kernel@N'"), std::string::npos) << err;
}
