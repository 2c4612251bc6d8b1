#pragma once
// What kerncap knows of one executable CUDA graph (a CUgraphExec): its nodes in the order
// their kernels count as launches, each kernel node's launch as the executable will run
// it next (function, shape, parameter bytes, launch attributes), and which nodes a target
// node depends on. Plain data and pure functions: no CUDA call, unit tested
// (tests/unit/capture_graph_model_test.cpp). GraphTracker (graph_tracker.hpp) keeps one
// per executable; graph_capture.cpp splits the graph around the target with it.
#include <cuda.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/manifest.hpp"

namespace kerncap::capture {

// A kernel node's launch, copied out of the graph: the graph's own parameter storage
// lives only as long as the node, and the application may destroy its graph right after
// instantiating it (PyTorch does).
struct GraphKernel {
  CUfunction f = nullptr;  // a CUfunction, or a CUkernel passed as one (as launches do)
  std::string mangled;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_mem = 0;
  std::vector<format::ParamSlot> slots;  // the parameter layout
  std::vector<uint8_t> params;           // the bytes the kernel sees, laid out by `slots`
  std::vector<CUlaunchAttribute> attrs;  // non-default launch attributes of the node
};

struct GraphNode {
  CUgraphNode source = nullptr;  // the node of the graph the application instantiated
  CUgraphNode copy = nullptr;    // the same node in kerncap's clone of that graph
  uint64_t id = 0;               // CUPTI's node id: the tie-break among ready nodes
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::vector<size_t> deps;      // indices (into the same vector) of the nodes it waits for
  bool enabled = true;           // cuGraphNodeSetEnabled on the executable
  std::optional<GraphKernel> kernel;  // kernel nodes only
  // Memset and memcpy nodes' parameters as the graph holds them (a window of one graph launch
  // replays them: window_graph.hpp); absent when the driver would not give them.
  std::optional<CUDA_MEMSET_NODE_PARAMS> memset;
  std::optional<CUDA_MEMCPY3D> memcpy;
};

struct GraphExec {
  CUgraph copy = nullptr;            // kerncap's clone of the instantiated graph
  std::shared_ptr<void> copy_owner;  // destroys `copy` when the last snapshot holding it goes
  std::vector<GraphNode> nodes;  // in launch-count order (order_topologically)
  // Non-empty: the executable was changed in a way kerncap does not mirror (a memcpy node's
  // parameters, for example), so its nodes cannot be re-run faithfully: why.
  std::string stale;
  bool launched = false;
};

// Puts `nodes` in the order their kernels count as launches: dependencies first, and
// among nodes ready together the smallest CUPTI id first (creation order, which is also
// the order of the graph's kernel records sorted by node id). `deps` index the vector
// before the call and are rewritten to index it after. False when the edges form a cycle.
bool order_topologically(std::vector<GraphNode>& nodes);

// ancestors[i]: node i must finish before node `target` starts (directly or through
// others). `nodes` in topological order.
std::vector<bool> ancestors_of(const std::vector<GraphNode>& nodes, size_t target);

// "kernel", "memcpy", "memory allocation", ... for messages.
const char* node_type_name(CUgraphNodeType type);

// Why the kernel node `target` cannot be run alone (its ancestors first, then it, then
// the rest), or "" when it can: a node kind that changes memory kerncap does not track or
// hides kernels (allocation, free, conditional, child graph), an ancestor whose re-run
// does more than the GPU work (a host callback runs application code twice; semaphore and
// batched memory-operation nodes signal or wait on values outside the graph), or a stale
// executable. Event record/wait nodes are harmless to re-run once everything is idle.
std::string split_refusal(const GraphExec& exec, size_t target);

}  // namespace kerncap::capture
