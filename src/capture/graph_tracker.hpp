#pragma once
// Graph tracking: for every executable graph the application instantiates, what its
// kernel nodes will launch, kept current through the executable's updates
// (cuGraphExecKernelNodeSetParams, cuGraphExecNodeSetParams, cuGraphExecUpdate,
// cuGraphNodeSetEnabled) until it is destroyed. Graphs are read once, at instantiation:
// however they were built (stream capture, explicit nodes, parameter setters, clones),
// the graph handed to cuGraphInstantiate is what the executable runs, and kerncap keeps
// a clone of it because the application may change or destroy it afterwards.
// Driver-API callbacks at API exit (successful calls only); no CUDA call is made here
// (GraphQueries reads the graphs), so unit tests feed it fake callback data.
#include <cupti.h>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/graph_seams.hpp"

namespace kerncap::capture {

class GraphTracker {
 public:
  explicit GraphTracker(GraphQueries& queries) : queries_(queries) {}
  // The CUPTI driver callback ids this tracker needs enabled.
  static const std::vector<CUpti_CallbackId>& callback_ids();
  // Handles one driver-API callback. Returns true if it was a graph call it tracks.
  bool on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  // What is known of `exec` now (nullptr for an executable never seen instantiated), and
  // remembers that it was launched. The snapshot stays valid while the caller holds it.
  std::shared_ptr<const GraphExec> launched(CUgraphExec exec);
  // Kernel names of executables never launched (still alive, or destroyed unlaunched).
  std::set<std::string> unlaunched_kernels() const;

 private:
  void instantiated(CUgraphExec exec, CUgraph graph);
  void updated(CUgraphExec exec, CUgraph graph);
  void kernel_params_set(CUgraphExec exec, CUgraphNode node, const KernelNodeView& view);
  void mark_stale(CUgraphExec exec, const std::string& why);
  void enabled_set(CUgraphExec exec, CUgraphNode node, bool enabled);
  void destroyed(CUgraphExec exec);
  // A copy of `exec`'s entry that may be changed (copy-on-write: launches hold snapshots).
  // Called with mu_ held; nullptr when unknown.
  GraphExec* writable(CUgraphExec exec);

  GraphQueries& queries_;
  mutable std::mutex mu_;
  std::unordered_map<CUgraphExec, std::shared_ptr<const GraphExec>> execs_;
  std::set<std::string> unlaunched_destroyed_;
};

}  // namespace kerncap::capture
