#pragma once
// The graph side of the capture logic's view of the outside world (seams.hpp has the
// launch side). GraphTracker reads graphs through GraphQueries, and LaunchWatcher hands a
// target found inside a graph launch to GraphTargetCapture, so that unit tests drive both
// with fake callback data and fake graphs, without a GPU
// (tests/unit/capture_graph_tracker_test.cpp, capture_graph_watch_test.cpp).
#include <cuda.h>
#include <cupti.h>

#include <array>
#include <cstdint>
#include <string>

#include "capture/graph_model.hpp"

namespace kerncap::capture {

// A kernel node's parameters as a node or a setter holds them. CUDA_KERNEL_NODE_PARAMS
// v1, v2 and v3 share these fields (v1 has no `kern`).
struct KernelNodeView {
  CUfunction func = nullptr;
  CUkernel kern = nullptr;  // used when func is null
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_mem = 0;
  void** kernel_params = nullptr;
  void** extra = nullptr;
};

template <typename P>
KernelNodeView kernel_node_view(const P& p) {
  KernelNodeView v;
  v.func = p.func;
  if constexpr (requires { p.kern; }) v.kern = p.kern;
  v.grid = {p.gridDimX, p.gridDimY, p.gridDimZ};
  v.block = {p.blockDimX, p.blockDimY, p.blockDimZ};
  v.shared_mem = p.sharedMemBytes;
  v.kernel_params = p.kernelParams;
  v.extra = p.extra;
  return v;
}

// Driver queries about graphs. Real implementation: DriverGraphQueries (graph_driver.hpp).
class GraphQueries {
 public:
  virtual ~GraphQueries() = default;
  // Reads every node of `graph` (kind, CUPTI id, dependencies as indices, kernel launches
  // with their parameter bytes copied) into out->nodes, in any order, and clones the graph
  // into out->copy (GraphNode::copy set). False, with why, when the graph cannot be read.
  virtual bool read_graph(CUgraph graph, GraphExec* out, std::string* why) = 0;
  // Copies a kernel launch as a parameter setter passes it (its pointers are valid only
  // during the call). Launch attributes are not part of it.
  virtual bool read_kernel(const KernelNodeView& view, GraphKernel* out, std::string* why) = 0;
  // Destroys a clone read_graph made.
  virtual void release(CUgraph copy) = 0;
};

// A target found inside a graph launch, at the cuGraphLaunch API entry.
struct GraphTarget {
  const CUpti_CallbackData* entry = nullptr;  // the cuGraphLaunch entry (context, correlation)
  CUgraphExec exec = nullptr;
  CUstream stream = nullptr;
  const GraphExec* graph = nullptr;  // what the tracker knows of `exec`
  size_t node = 0;                    // the target's index in graph->nodes
  uint64_t launch_index = 0;          // among all launches this process made, from 0
  int target = -1;                    // several targets: which one; -1: the one
  // The application goes on after this capture (--continue, or other targets still wait):
  // its memory is kept and put back before its graph launch runs.
  bool keep_running = false;
};

// What happens at a target inside a graph launch: run its ancestors, BEFORE, the target as
// an ordinary launch, AFTER, then leave the application's graph launch to run as if
// nothing happened (--continue) or stop. Real implementation: GraphCapturer
// (graph_capture.hpp). Never throws; failures are reported.
class GraphTargetCapture {
 public:
  virtual ~GraphTargetCapture() = default;
  virtual void capture(const GraphTarget& target) = 0;
};

}  // namespace kerncap::capture
