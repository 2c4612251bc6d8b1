#include "capture/graph_capture.hpp"

#include <unistd.h>

#include <cstdio>
#include <optional>

#include "capture/events.hpp"
#include "capture/context_scope.hpp"
#include "capture/graph_driver.hpp"
#include "capture/graph_node_launch.hpp"
#include "capture/graph_saved_state.hpp"
#include "capture/launch_info.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/launch_dims.hpp"
#include "common/log.hpp"
#include "format/events.hpp"
#include "names/demangle.hpp"

namespace kerncap::capture {
namespace {

// Destroys what kerncap created here, whichever way the capture ends.
template <typename H, typename F>
class Owned {
 public:
  explicit Owned(F destroy) : destroy_(destroy) {}
  ~Owned() {
    if (h) destroy_(h);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  H h = nullptr;

 private:
  F destroy_;
};

// The kernel node parameters that reproduce `k`, pointing into `ptrs`/`bytes`.
CUDA_KERNEL_NODE_PARAMS node_params(const GraphKernel& k, std::vector<uint8_t>& bytes, std::vector<void*>& ptrs) {
  bytes = k.params;
  ptrs.clear();
  for (const auto& s : k.slots) ptrs.push_back(bytes.data() + s.offset);
  CUDA_KERNEL_NODE_PARAMS p{};
  if (resolve_function(k.f).was_kernel_handle) p.kern = reinterpret_cast<CUkernel>(k.f);
  else p.func = k.f;
  set_launch_dims(p, k.grid, k.block);
  p.sharedMemBytes = k.shared_mem;
  p.kernelParams = ptrs.data();
  return p;
}

// Runs the nodes `target` depends on, and only those, as the executable would run them.
// Removing every other node keeps the ancestors' own ordering: whatever an ancestor waits
// for is an ancestor too.
// `*ran` turns true once the application's memory may have changed.
void run_ancestors(const GraphExec& g, size_t target, CUstream stream, bool* ran) {
  const std::vector<bool> anc = ancestors_of(g.nodes, target);
  size_t count = 0;
  for (bool a : anc) count += a;
  if (count == 0) return;
  log::info("running the {} graph node(s) the target depends on", count);
  auto destroy_graph = [](CUgraph h) { graph_driver().cuGraphDestroy(h); };
  Owned<CUgraph, decltype(destroy_graph)> reduced(destroy_graph);
  KC_GRAPH(cuGraphClone(&reduced.h, g.copy));
  std::vector<CUgraphNode> nodes(g.nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) KC_GRAPH(cuGraphNodeFindInClone(&nodes[i], g.nodes[i].copy, reduced.h));
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!anc[i]) {
      KC_GRAPH(cuGraphDestroyNode(nodes[i]));
    } else if (g.nodes[i].kernel) {
      // The executable's parameters now, which setters may have changed since the clone.
      std::vector<uint8_t> bytes;
      std::vector<void*> ptrs;
      CUDA_KERNEL_NODE_PARAMS p = node_params(*g.nodes[i].kernel, bytes, ptrs);
      KC_GRAPH(cuGraphKernelNodeSetParams(nodes[i], &p));
    }
  }
  auto destroy_exec = [](CUgraphExec h) { graph_driver().cuGraphExecDestroy(h); };
  Owned<CUgraphExec, decltype(destroy_exec)> exec(destroy_exec);
  KC_GRAPH(cuGraphInstantiate(&exec.h, reduced.h, 0));
  for (size_t i = 0; i < nodes.size(); ++i)
    if (anc[i] && !g.nodes[i].enabled) KC_GRAPH(cuGraphNodeSetEnabled(exec.h, nodes[i], 0));
  *ran = true;
  KC_GRAPH(cuGraphLaunch(exec.h, stream));
  KC_CU(cuStreamSynchronize(stream));
}

// Without --continue no copy of the application's memory is kept, and the ancestors (maybe
// the target too) have already run: the graph launch would run them a second time. An
// application that cannot go on with its own results is stopped, as after a capture.
[[noreturn]] void stop_after_failure() {
  log::warn("stopping the application: kerncap already ran part of its CUDA graph, so it cannot go on with "
            "its own results (--continue keeps a copy of its memory to put back)");
  emit(format::events::stopping());
  std::fflush(nullptr);
  ::_exit(1);
}

void report_failure(const std::string& why) {
  log::warn("capture failed: {}", why);
  emit(format::events::error(why));
}

}  // namespace

void GraphCapturer::capture(const GraphTarget& t) {
  bool ran = false;
  try {
    run(t, &ran);
    return;
  } catch (const std::exception& e) {
    report_failure(e.what());
  } catch (...) {
    report_failure("capture failed inside a CUDA graph launch");
  }
  if (!ran) return;
  if (!t.keep_running) stop_after_failure();
  log::warn("the application's memory could not be put back after the failed capture: its results may differ");
}

void GraphCapturer::run(const GraphTarget& t, bool* ran) {
  const GraphExec& g = *t.graph;
  const GraphKernel& k = *g.nodes[t.node].kernel;
  ContextScope ctx(t.entry->context);
  log::info("the target {} is node {} of {} of a CUDA graph launch", names::demangle(k.mangled), t.node,
            g.nodes.size());
  KC_CU(cuCtxSynchronize());
  // Kept before anything of the graph runs: the application's launch must start from it.
  std::optional<SavedState> saved;
  if (t.keep_running) {
    saved.emplace(inventory_.tracker.live());
    log::info("kept {} of the application's memory to put back after the capture", human_bytes(saved->bytes()));
  }
  auto destroy_stream = [](CUstream s) { KC_CU_TRY(cuStreamDestroy(s)); };
  Owned<CUstream, decltype(destroy_stream)> stream(destroy_stream);
  KC_CU(cuStreamCreate(&stream.h, CU_STREAM_NON_BLOCKING));
  try {
    run_ancestors(g, t.node, stream.h, ran);

    // The target as an ordinary launch, decoded by Capturer like any cuLaunchKernelEx.
    GraphNodeLaunch launch(k, stream.h, *t.entry);
    if (capturer_.begin(TargetLaunch{GraphNodeLaunch::kCbid, &launch.entry, k.mangled, t.launch_index, t.target,
                                     !t.keep_running})) {
      *ran = true;
      launch.result = KC_CU_TRY(cuLaunchKernelEx(&launch.cfg, k.f, launch.params.kernelParams, nullptr));
      CUpti_CallbackData exit = launch.entry;
      exit.callbackSite = CUPTI_API_EXIT;
      capturer_.finish(exit);  // a capture that succeeds without --continue ends the application here
    }
    // Still here without --continue: the capture failed and was reported.
    if (!saved && *ran) stop_after_failure();
  } catch (...) {
    if (saved) {
      KC_CU_TRY(cuCtxSynchronize());
      saved->restore();
      *ran = false;  // put back: the application can go on
    }
    throw;
  }
  if (saved) {
    KC_CU(cuCtxSynchronize());
    saved->restore();
    log::info("put the application's memory back; its graph launch now runs as it would have");
  }
}

}  // namespace kerncap::capture
