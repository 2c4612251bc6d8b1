#pragma once
// The driver side of graph tracking and graph capture: the graph entry points (resolved
// here, beside the common driver table, since only the injected library needs them) and
// DriverGraphQueries, GraphQueries' real implementation.
#include <cuda.h>

#include "capture/graph_seams.hpp"

namespace kerncap::capture {

#define KERNCAP_GRAPH_FUNCS(X)                                                                     \
  X(cuGraphGetNodes) X(cuGraphNodeGetType) X(cuGraphNodeGetDependencies) X(cuGraphClone)          \
  X(cuGraphNodeFindInClone) X(cuGraphDestroyNode) X(cuGraphDestroy) X(cuGraphKernelNodeGetParams) \
  X(cuGraphKernelNodeSetParams) X(cuGraphKernelNodeGetAttribute) X(cuGraphInstantiate)           \
  X(cuGraphNodeSetEnabled) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphMemsetNodeGetParams)               \
  X(cuGraphMemcpyNodeGetParams)

struct GraphDriver {
#define KERNCAP_GRAPH_MEMBER(name) decltype(&::name) name = nullptr;
  KERNCAP_GRAPH_FUNCS(KERNCAP_GRAPH_MEMBER)
#undef KERNCAP_GRAPH_MEMBER
};

// Resolved once from the loaded driver; throws Error(Device) naming what is missing.
const GraphDriver& graph_driver();

// The checking macro for graph_driver() calls, as KC_CU is for driver().
#define KC_GRAPH(call)                                                                   \
  do {                                                                                   \
    CUresult kc_graph_result_ = ::kerncap::capture::graph_driver().call;                 \
    if (kc_graph_result_ != CUDA_SUCCESS)                                                \
      ::kerncap::cu_fail(kc_graph_result_, #call, __FILE__, __LINE__);                   \
  } while (0)

class DriverGraphQueries final : public GraphQueries {
 public:
  bool read_graph(CUgraph graph, GraphExec* out, std::string* why) override;
  bool read_kernel(const KernelNodeView& view, GraphKernel* out, std::string* why) override;
  void release(CUgraph copy) override;
};

}  // namespace kerncap::capture
