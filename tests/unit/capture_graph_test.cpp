// CUDA graphs in capture mode, driven by fake callbacks and fake graphs: the node order
// kernels count in, the ancestors of a target, which graphs cannot be split, tracking an
// executable through its updates, and counting/choosing a target inside graph launches.
// No GPU, no driver: GraphQueries and GraphTargetCapture are faked.
#include <gtest/gtest.h>

#include <cstring>

#include "capture/events.hpp"
#include "capture/graph_model.hpp"
#include "capture/graph_tracker.hpp"
#include "capture/watcher.hpp"
#include "capture_fakes.hpp"

using namespace kerncap::capture;
using namespace kerncap::capture::testing;

namespace {

constexpr const char* kScale = "_Z5scalePfi";  // scale(float*, int)
constexpr const char* kAdd = "_Z3addPfS_i";    // add(float*, float*, int)
constexpr const char* kInit = "_Z4initPf";     // init(float*)

template <typename T>
T handle(uintptr_t v) {
  return reinterpret_cast<T>(v);
}

GraphNode kernel_node(uintptr_t source, uint64_t id, const char* mangled, std::vector<size_t> deps = {}) {
  GraphNode n;
  n.source = handle<CUgraphNode>(source);
  n.copy = handle<CUgraphNode>(source + 0x1000);
  n.id = id;
  n.type = CU_GRAPH_NODE_TYPE_KERNEL;
  n.deps = std::move(deps);
  GraphKernel k;
  k.f = handle<CUfunction>(source + 0x2000);
  k.mangled = mangled;
  k.slots = {{0, 4}};
  k.params = {1, 0, 0, 0};
  n.kernel = k;
  return n;
}

GraphNode plain_node(uintptr_t source, uint64_t id, CUgraphNodeType type, std::vector<size_t> deps = {}) {
  GraphNode n;
  n.source = handle<CUgraphNode>(source);
  n.id = id;
  n.type = type;
  n.deps = std::move(deps);
  return n;
}

std::vector<std::string> names_of(const std::vector<GraphNode>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.kernel ? n.kernel->mangled : node_type_name(n.type));
  return out;
}

// The driver's answers about graphs: the graphs the application "built", by handle.
struct FakeGraphQueries : GraphQueries {
  std::map<CUgraph, std::vector<GraphNode>> graphs;
  std::map<CUfunction, std::string> names;  // for parameter setters
  std::vector<CUgraph> released;
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
  bool read_kernel(const KernelNodeView& v, GraphKernel* out, std::string* why) override {
    auto it = names.find(v.func);
    if (it == names.end()) {
      *why = "unnamed";
      return false;
    }
    out->f = v.func;
    out->mangled = it->second;
    out->grid = v.grid;
    out->slots = {{0, 4}};
    out->params.assign(4, 0);
    std::memcpy(out->params.data(), v.kernel_params[0], 4);
    return true;
  }
  void release(CUgraph copy) override { released.push_back(copy); }
};

struct FakeGraphTarget : GraphTargetCapture {
  struct Taken {
    CUgraphExec exec;
    size_t node;
    std::string mangled;
    uint64_t launch_index;
    uint32_t correlation;
    int target = -1;
    bool keep_running = false;
  };
  std::vector<Taken> taken;
  void capture(const GraphTarget& t) override {
    taken.push_back({t.exec, t.node, t.graph->nodes[t.node].kernel->mangled, t.launch_index, t.entry->correlationId,
                     t.target, t.keep_running});
  }
};

// Capture mode with graph tracking, the driver and the capture work faked.
struct Harness {
  TempDir dir{"graphs"};
  Config config;
  std::unique_ptr<Inventory> inventory;
  FakeQueries driver;
  FakeTarget target;
  FakeGraphQueries graph_queries;
  FakeGraphTarget graph_target;
  std::unique_ptr<GraphTracker> tracker;
  std::unique_ptr<LaunchWatcher> watcher;
  uint32_t next_correlation = 1;

  explicit Harness(std::string kernel, uint64_t dispatch = 0, std::vector<kerncap::format::TargetSpec> targets = {}) {
    config.mode = Mode::Capture;
    config.output = dir.path().string();
    config.kernel = std::move(kernel);
    config.dispatch = dispatch;
    for (size_t i = 0; i < targets.size(); ++i) {
      targets[i].output = (dir.path() / ("t" + std::to_string(i))).string();
      std::filesystem::create_directories(std::filesystem::path(targets[i].output) / ".kerncap");
    }
    config.targets = std::move(targets);
    events_open(config.output);
    inventory = std::make_unique<Inventory>(config);
    tracker = std::make_unique<GraphTracker>(graph_queries);
    watcher = std::make_unique<LaunchWatcher>(config, *inventory, driver, target);
    watcher->watch_graphs(*tracker, graph_target);
  }
  void call(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb);
  }
  void instantiate(CUgraphExec exec, CUgraph graph) {
    CUgraphExec out = exec;
    FakeCall<cuGraphInstantiateWithFlags_params> c({&out, graph, 0});
    call(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &c.cb);
  }
  void graph_launch(CUgraphExec exec, CUstream stream = nullptr) {
    FakeCall<cuGraphLaunch_params> c({exec, stream}, CUPTI_API_ENTER, next_correlation++);
    call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &c.cb);
    c.cb.callbackSite = CUPTI_API_EXIT;
    call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &c.cb);
  }
  void launch(const char* symbol) {
    FakeLaunch l(symbol, next_correlation++);
    call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  }
  std::vector<nlohmann::json> events(const std::string& kind) const { return events_of(config.output, kind); }
};

// init -> add -> scale, plus a memset feeding scale: the order a stream capture gives.
std::vector<GraphNode> chain() {
  return {kernel_node(0x30, 3, kScale, {2, 3}), kernel_node(0x10, 1, kInit), kernel_node(0x20, 2, kAdd, {1}),
          plain_node(0x25, 2, CU_GRAPH_NODE_TYPE_MEMSET)};
}

}  // namespace

TEST(CaptureGraphModel, TopologicalOrderBreaksTiesByNodeId) {
  std::vector<GraphNode> nodes = chain();
  ASSERT_TRUE(order_topologically(nodes));
  EXPECT_EQ(names_of(nodes), (std::vector<std::string>{kInit, kAdd, "memset", kScale}));
  // Dependencies now index the ordered vector.
  EXPECT_EQ(nodes[1].deps, std::vector<size_t>{0});
  EXPECT_EQ(nodes[3].deps, (std::vector<size_t>{1, 2}));

  // Two independent branches: ids decide, whatever the order the driver listed them in.
  std::vector<GraphNode> wide = {kernel_node(1, 9, kScale), kernel_node(2, 4, kAdd), kernel_node(3, 1, kInit, {0, 1})};
  ASSERT_TRUE(order_topologically(wide));
  EXPECT_EQ(names_of(wide), (std::vector<std::string>{kAdd, kScale, kInit}));

  std::vector<GraphNode> cycle = {kernel_node(1, 1, kScale, {1}), kernel_node(2, 2, kAdd, {0})};
  EXPECT_FALSE(order_topologically(cycle));
}

TEST(CaptureGraphModel, AncestorsAreTransitive) {
  std::vector<GraphNode> nodes = chain();
  nodes.push_back(kernel_node(0x40, 4, kAdd, {0}));  // depends on scale: not an ancestor
  ASSERT_TRUE(order_topologically(nodes));
  // init, add, memset, scale, add(after scale)
  EXPECT_EQ(ancestors_of(nodes, 3), (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ(ancestors_of(nodes, 1), (std::vector<bool>{true, false, false, false, false}));
  EXPECT_EQ(ancestors_of(nodes, 0), (std::vector<bool>(5, false)));
}

TEST(CaptureGraphModel, GraphsThatCannotBeSplitAreNamed) {
  GraphExec g;
  g.nodes = chain();
  ASSERT_TRUE(order_topologically(g.nodes));
  EXPECT_EQ(split_refusal(g, 3), "");

  GraphExec alloc = g;
  alloc.nodes.push_back(plain_node(0x50, 9, CU_GRAPH_NODE_TYPE_MEM_ALLOC));
  EXPECT_NE(split_refusal(alloc, 3).find("memory allocation node"), std::string::npos) << split_refusal(alloc, 3);

  // A host callback after the target is run by the application's own launch only; one
  // before it would run twice.
  GraphExec host_after = g;
  host_after.nodes.push_back(plain_node(0x50, 9, CU_GRAPH_NODE_TYPE_HOST, {3}));
  EXPECT_EQ(split_refusal(host_after, 3), "");
  GraphExec host_before = g;
  host_before.nodes[0].type = CU_GRAPH_NODE_TYPE_HOST;
  host_before.nodes[0].kernel.reset();
  EXPECT_NE(split_refusal(host_before, 3).find("depends on a host callback node"), std::string::npos);

  GraphExec stale = g;
  stale.stale = "changed behind our back";
  EXPECT_EQ(split_refusal(stale, 3), "changed behind our back");
}

TEST(CaptureGraph, KernelNodesCountAsLaunchesInNodeOrder) {
  Harness h("scale", 2);
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec exec = handle<CUgraphExec>(0x88);
  h.graph_queries.graphs[graph] = chain();
  h.instantiate(exec, graph);
  h.launch(kScale);        // launch 0, match 0
  h.graph_launch(exec);    // launches 1-3: init, add, scale (match 1)
  EXPECT_TRUE(h.graph_target.taken.empty());
  h.graph_launch(exec);    // launches 4-6: scale is match 2, the target
  ASSERT_EQ(h.graph_target.taken.size(), 1u);
  const auto& t = h.graph_target.taken[0];
  EXPECT_EQ(t.exec, exec);
  EXPECT_EQ(t.node, 3u);  // init, add, memset, scale
  EXPECT_EQ(t.mangled, kScale);
  EXPECT_EQ(t.launch_index, 6u);
  EXPECT_EQ(t.correlation, 3u);
  EXPECT_TRUE(h.target.begun.empty());  // the ordinary path is not involved
  EXPECT_TRUE(h.watcher->done());
  EXPECT_EQ(h.events("match").size(), 3u);
  EXPECT_TRUE(h.events("graph_launch").empty());
}

TEST(CaptureGraph, DisabledNodesDoNotRunAndUpdatesAreFollowed) {
  Harness h("scale", 1);
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec exec = handle<CUgraphExec>(0x88);
  h.graph_queries.graphs[graph] = chain();
  h.instantiate(exec, graph);

  // The application disables the scale node for one launch: that launch does not count it.
  FakeCall<cuGraphNodeSetEnabled_params> off({exec, handle<CUgraphNode>(0x30), 0});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &off.cb);
  h.graph_launch(exec);
  EXPECT_TRUE(h.events("match").empty());
  FakeCall<cuGraphNodeSetEnabled_params> on({exec, handle<CUgraphNode>(0x30), 1});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled, &on.cb);

  // New parameters for the scale node between launches: the snapshot taken at the first
  // launch keeps the old ones, the next launch sees the new ones.
  auto before = h.tracker->launched(exec);
  CUfunction scale_fn = handle<CUfunction>(0x2030);
  h.graph_queries.names[scale_fn] = kScale;
  int32_t value = 42;
  void* args[] = {&value};
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = scale_fn;
  p.gridDimX = 7;
  p.gridDimY = p.gridDimZ = p.blockDimX = p.blockDimY = p.blockDimZ = 1;
  p.kernelParams = args;
  FakeCall<cuGraphExecKernelNodeSetParams_v2_params> set({exec, handle<CUgraphNode>(0x30), &p});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2, &set.cb);
  auto after = h.tracker->launched(exec);
  EXPECT_EQ(before->nodes[3].kernel->params, (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(after->nodes[3].kernel->params, (std::vector<uint8_t>{42, 0, 0, 0}));
  EXPECT_EQ(after->nodes[3].kernel->grid[0], 7u);

  h.graph_launch(exec);  // scale: match 0
  h.graph_launch(exec);  // scale: match 1, the target
  ASSERT_EQ(h.graph_target.taken.size(), 1u);
  EXPECT_EQ(h.graph_target.taken[0].launch_index, 2u + 3u + 2u);  // init, add of each launch before
}

TEST(CaptureGraph, FailedCallsAndForeignUpdatesAreHandled) {
  Harness h("scale");
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec exec = handle<CUgraphExec>(0x88);
  h.graph_queries.graphs[graph] = chain();
  {
    CUgraphExec out = exec;
    FakeCall<cuGraphInstantiateWithFlags_params> failed({&out, graph, 0});
    failed.result = CUDA_ERROR_INVALID_VALUE;
    h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, &failed.cb);
  }
  EXPECT_EQ(h.tracker->launched(exec), nullptr);
  h.instantiate(exec, graph);
  // A memset node changed on the executable: kerncap cannot re-run the graph faithfully.
  FakeCall<cuGraphExecMemsetNodeSetParams_params> memset({exec, handle<CUgraphNode>(0x25), nullptr, nullptr});
  memset.cb.functionName = "cuGraphExecMemsetNodeSetParams";
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams, &memset.cb);
  h.graph_launch(exec);
  EXPECT_TRUE(h.graph_target.taken.empty());
  EXPECT_TRUE(h.watcher->done());
  auto errors = h.events("error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0]["what"].get<std::string>().find("cuGraphExecMemsetNodeSetParams"), std::string::npos);
}

TEST(CaptureGraph, GraphsThatCannotBeSplitAreRefusedClearly) {
  Harness h("scale");
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec exec = handle<CUgraphExec>(0x88);
  auto nodes = chain();
  nodes.push_back(plain_node(0x60, 8, CU_GRAPH_NODE_TYPE_MEM_ALLOC));
  h.graph_queries.graphs[graph] = nodes;
  h.instantiate(exec, graph);
  h.graph_launch(exec);
  EXPECT_TRUE(h.graph_target.taken.empty());
  auto errors = h.events("error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0]["what"].get<std::string>().find("memory allocation node"), std::string::npos);
}

TEST(CaptureGraph, UpdatesReplaceTheGraphAndDestroyReleasesIt) {
  Harness h("scale", 5);
  CUgraph graph = handle<CUgraph>(0x77), graph2 = handle<CUgraph>(0x78);
  CUgraphExec exec = handle<CUgraphExec>(0x88);
  h.graph_queries.graphs[graph] = chain();
  auto changed = chain();
  changed[0].kernel->grid = {9, 1, 1};
  for (auto& n : changed) n.source = handle<CUgraphNode>(reinterpret_cast<uintptr_t>(n.source) + 0x100);
  h.graph_queries.graphs[graph2] = changed;
  h.instantiate(exec, graph);
  CUgraph first_copy = h.tracker->launched(exec)->copy;
  FakeCall<cuGraphExecUpdate_v2_params> update({exec, graph2, nullptr});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2, &update.cb);
  auto g = h.tracker->launched(exec);
  EXPECT_EQ(g->nodes[3].kernel->grid[0], 9u);
  // Per-node calls keep naming the nodes of the graph first instantiated.
  EXPECT_EQ(g->nodes[3].source, handle<CUgraphNode>(0x30));
  EXPECT_EQ(h.graph_queries.released, std::vector<CUgraph>{first_copy});
  g.reset();
  FakeCall<cuGraphExecDestroy_params> destroy({exec});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, &destroy.cb);
  EXPECT_EQ(h.graph_queries.released.size(), 2u);
  EXPECT_EQ(h.tracker->launched(exec), nullptr);
}

TEST(CaptureGraph, NestedLaunchesAndUnlaunchedGraphsAreExplained) {
  Harness h("scale");
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec exec = handle<CUgraphExec>(0x88), never = handle<CUgraphExec>(0x99);
  h.graph_queries.graphs[graph] = chain();
  h.instantiate(exec, graph);
  h.instantiate(never, graph);
  CUstream capturing = handle<CUstream>(0x50);
  h.driver.capturing.insert(capturing);
  h.graph_launch(exec, capturing);
  EXPECT_TRUE(h.events("match").empty());
  auto skipped = h.events("skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0]["why"], "graph launched on a stream capturing another CUDA graph");
  // `exec` was launched (into another graph); `never` was not.
  FakeCall<cuGraphExecDestroy_params> destroy({exec});
  h.call(CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy, &destroy.cb);
  h.watcher->report_unlaunched_graphs();
  skipped = h.events("skipped");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[1]["why"], "only in a CUDA graph that was never launched");
  EXPECT_EQ(skipped[1]["mangled"], kScale);
}

TEST(CaptureGraph, SeveralTargetsInOneGraphLaunch) {
  using kerncap::format::MatchKind;
  Harness h("", 0, {{"init", MatchKind::Substring, 0, ""}, {"scale", MatchKind::Substring, 0, ""}});
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec exec = handle<CUgraphExec>(0x88);
  h.graph_queries.graphs[graph] = chain();
  h.instantiate(exec, graph);
  h.graph_launch(exec);  // init (target 0), add, scale (target 1)
  ASSERT_EQ(h.graph_target.taken.size(), 2u);
  EXPECT_EQ(h.graph_target.taken[0].target, 0);
  EXPECT_EQ(h.graph_target.taken[0].mangled, kInit);
  EXPECT_TRUE(h.graph_target.taken[0].keep_running);  // scale still waits: the memory is put back
  EXPECT_EQ(h.graph_target.taken[1].target, 1);
  EXPECT_EQ(h.graph_target.taken[1].launch_index, 2u);
  EXPECT_FALSE(h.graph_target.taken[1].keep_running);  // the last one, no --continue
  EXPECT_TRUE(h.watcher->done());
}

TEST(CaptureGraph, SkipsNameTheTargetsTheyConcern) {
  using kerncap::format::MatchKind;
  Harness h("", 0, {{"add", MatchKind::Substring, 0, ""}, {"scale", MatchKind::Substring, 0, ""}});
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec never = handle<CUgraphExec>(0x99);
  h.graph_queries.graphs[graph] = chain();
  h.instantiate(never, graph);
  h.launch(kAdd);  // target 0 taken directly
  h.watcher->report_unlaunched_graphs();
  auto skipped = h.events("skipped");
  ASSERT_EQ(skipped.size(), 1u);  // scale only: add was taken
  EXPECT_EQ(skipped[0]["mangled"], kScale);
  EXPECT_EQ(skipped[0]["reason"], "unlaunched_graph");
  EXPECT_EQ(skipped[0]["targets"], nlohmann::json::array({1}));
}

TEST(CaptureGraph, UnknownExecutablesAreOnlyNoted) {
  Harness h("scale");
  h.graph_launch(handle<CUgraphExec>(0x123));
  h.graph_launch(handle<CUgraphExec>(0x124));
  EXPECT_EQ(h.events("graph_launch").size(), 1u);
  EXPECT_FALSE(h.watcher->done());
}

TEST(CaptureGraph, AutotunerGraphLaunchesAreNotCounted) {
  Harness h("scale");
  CUgraph graph = handle<CUgraph>(0x77);
  CUgraphExec exec = handle<CUgraphExec>(0x88);
  h.graph_queries.graphs[graph] = chain();
  h.instantiate(exec, graph);
  ignore_begin();  // as around triton.testing.do_bench_cudagraph
  h.graph_launch(exec);
  ignore_end();
  EXPECT_TRUE(h.graph_target.taken.empty());
  EXPECT_EQ(h.events("ignored").size(), 1u);
  h.graph_launch(exec);
  ASSERT_EQ(h.graph_target.taken.size(), 1u);
  EXPECT_EQ(h.graph_target.taken[0].launch_index, 3u + 2u);  // ignored launches are still launches
  // Once the target is taken, graph calls are no longer tracked or counted.
  h.graph_launch(exec);
  EXPECT_EQ(h.graph_target.taken.size(), 1u);
  EXPECT_EQ(h.watcher->launches(), 6u);
}
