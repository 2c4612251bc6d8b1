#include "capture/graph_driver.hpp"

#include <dlfcn.h>

#include <string>
#include <unordered_map>

#include <cupti.h>
#include <fmt/format.h>

#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace kerncap::capture {
namespace {

struct LoadedGraphDriver {
  GraphDriver table;
  std::string missing;
};

LoadedGraphDriver load() {
  LoadedGraphDriver out;
  int version = 0;
  // An older driver would hand back older ABIs under these names (cuGraphNodeGetDependencies
  // without edge data): graphs are then not tracked at all rather than called wrongly.
  if (KC_CU_TRY(cuDriverGetVersion(&version)) != CUDA_SUCCESS || version < 12030) {
    out.missing = fmt::format("a CUDA 12.3 or newer driver (this one: {})", version);
    return out;
  }
  // The driver is loaded already (common/driver.cpp); only its entry points are looked up.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = lib ? reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2")) : nullptr;
  if (!get_proc) {
    out.missing = "cuGetProcAddress_v2";
    return out;
  }
#define KERNCAP_GRAPH_RESOLVE(name)                                                                    \
  {                                                                                                    \
    void* fn = nullptr;                                                                                \
    CUdriverProcAddressQueryResult st{};                                                               \
    if (get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) == CUDA_SUCCESS &&         \
        st == CU_GET_PROC_ADDRESS_SUCCESS)                                                             \
      out.table.name = reinterpret_cast<decltype(out.table.name)>(fn);                                 \
    else                                                                                               \
      out.missing += #name " ";                                                                        \
  }
  KERNCAP_GRAPH_FUNCS(KERNCAP_GRAPH_RESOLVE)
#undef KERNCAP_GRAPH_RESOLVE
  return out;
}

// The launch attributes a kernel node may carry that change how it runs; the node's
// others are defaults or scheduling hints.
const CUlaunchAttributeID kNodeAttrs[] = {
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,  CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE,        CU_LAUNCH_ATTRIBUTE_PRIORITY,
    CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
};

bool is_default(CUlaunchAttributeID id, const CUlaunchAttributeValue& v) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: return v.clusterDim.x <= 1 && v.clusterDim.y <= 1 && v.clusterDim.z <= 1;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: return v.clusterSchedulingPolicyPreference == 0;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: return v.cooperative == 0;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY: return v.priority == 0;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: return v.memSyncDomain == 0;
    default: return true;
  }
}

}  // namespace

const GraphDriver& graph_driver() {
  static const LoadedGraphDriver l = load();
  // Every entry is called without a null check: all of them, or graphs are not tracked.
  if (!l.missing.empty())
    device_error("this NVIDIA driver lacks the CUDA graph entry points kerncap needs: " + l.missing);
  return l.table;
}

bool DriverGraphQueries::read_kernel(const KernelNodeView& v, GraphKernel* out, std::string* why) {
  out->f = v.func ? v.func : reinterpret_cast<CUfunction>(v.kern);
  if (!out->f) {
    *why = "the node names no function";
    return false;
  }
  DriverLaunchQueries names;
  out->mangled = names.kernel_name(out->f);
  if (out->mangled.empty()) {
    *why = "the driver does not name the node's function";
    return false;
  }
  out->grid = v.grid;
  out->block = v.block;
  out->shared_mem = v.shared_mem;
  const ResolvedFunction fn = resolve_function(out->f);
  out->slots = driver_param_layout(out->f, fn.was_kernel_handle);
  LaunchArgs a;
  a.f = out->f;
  a.kernel_params = v.kernel_params;
  a.extra = v.extra;
  std::string source;
  const Driver& d = driver();
  const bool has_layout_query = fn.was_kernel_handle ? d.cuKernelGetParamInfo != nullptr : d.cuFuncGetParamInfo != nullptr;
  if (out->slots.empty() && v.kernel_params && !has_layout_query) {
    // Without the driver's layout the bytes behind kernelParams cannot be sized (an empty
    // layout from a driver that has the query means: no parameters).
    *why = "this driver cannot give the kernel's parameter layout (cuFuncGetParamInfo needs CUDA 12.4 or newer)";
    return false;
  }
  return pack_params(a, out->slots, &out->params, &source, why);
}

bool DriverGraphQueries::read_graph(CUgraph graph, GraphExec* out, std::string* why) {
  try {
    const GraphDriver& d = graph_driver();
    size_t n = 0;
    KC_GRAPH(cuGraphGetNodes(graph, nullptr, &n));
    std::vector<CUgraphNode> handles(n);
    if (n) KC_GRAPH(cuGraphGetNodes(graph, handles.data(), &n));
    handles.resize(n);
    std::unordered_map<CUgraphNode, size_t> index;
    for (size_t i = 0; i < n; ++i) index[handles[i]] = i;
    out->nodes.assign(n, GraphNode{});
    for (size_t i = 0; i < n; ++i) {
      GraphNode& node = out->nodes[i];
      node.source = handles[i];
      KC_GRAPH(cuGraphNodeGetType(handles[i], &node.type));
      uint64_t node_id = 0;
      node.id = cuptiGetGraphNodeId(handles[i], &node_id) == CUPTI_SUCCESS ? node_id : i;
      size_t m = 0;
      KC_GRAPH(cuGraphNodeGetDependencies(handles[i], nullptr, nullptr, &m));
      std::vector<CUgraphNode> deps(m);
      // Edge data is asked for too: without it the driver refuses to list programmatic
      // (non-default) edges (CUDA_ERROR_LOSSY_QUERY). Every edge orders the nodes here.
      std::vector<CUgraphEdgeData> edges(m);
      if (m) KC_GRAPH(cuGraphNodeGetDependencies(handles[i], deps.data(), edges.data(), &m));
      for (size_t k = 0; k < m; ++k) node.deps.push_back(index.at(deps[k]));
      // A window of one graph launch replays memsets and copies too; a node whose parameters
      // the driver will not give is refused there, and changes nothing for one-kernel captures.
      if (node.type == CU_GRAPH_NODE_TYPE_MEMSET) {
        CUDA_MEMSET_NODE_PARAMS ms{};
        if (d.cuGraphMemsetNodeGetParams(handles[i], &ms) == CUDA_SUCCESS) node.memset = ms;
      } else if (node.type == CU_GRAPH_NODE_TYPE_MEMCPY) {
        CUDA_MEMCPY3D mc{};
        if (d.cuGraphMemcpyNodeGetParams(handles[i], &mc) == CUDA_SUCCESS) node.memcpy = mc;
      }
      if (node.type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
      CUDA_KERNEL_NODE_PARAMS p{};
      KC_GRAPH(cuGraphKernelNodeGetParams(handles[i], &p));
      GraphKernel k;
      std::string kwhy;
      if (!read_kernel(kernel_node_view(p), &k, &kwhy)) {
        if (k.mangled.empty()) {
          *why = "a kernel node: " + kwhy;
          return false;
        }
        out->stale = "cannot read the parameters of a kernel node: " + kwhy;
      }
      for (CUlaunchAttributeID id : kNodeAttrs) {
        CUlaunchAttributeValue v{};
        if (d.cuGraphKernelNodeGetAttribute(handles[i], id, &v) != CUDA_SUCCESS || is_default(id, v)) continue;
        CUlaunchAttribute at{};
        at.id = id;
        at.value = v;
        k.attrs.push_back(at);
      }
      node.kernel = std::move(k);
    }
    // The application may change or destroy its graph once it is instantiated. A graph the
    // driver will not clone (graph memory nodes) is still counted; a target in it is refused.
    try {
      KC_GRAPH(cuGraphClone(&out->copy, graph));
      for (auto& node : out->nodes) KC_GRAPH(cuGraphNodeFindInClone(&node.copy, node.source, out->copy));
    } catch (const std::exception& e) {
      if (out->copy) release(out->copy);
      out->copy = nullptr;
      for (auto& node : out->nodes) node.copy = nullptr;
      out->stale = std::string("kerncap cannot copy this graph: ") + e.what();
    }
    return true;
  } catch (const std::exception& e) {
    *why = e.what();
    if (out->copy) release(out->copy);
    out->copy = nullptr;
    return false;
  }
}

void DriverGraphQueries::release(CUgraph copy) {
  ToolScope scope;
  try {
    if (graph_driver().cuGraphDestroy(copy) != CUDA_SUCCESS) log::debug("could not destroy a graph clone");
  } catch (...) {
  }
}

}  // namespace kerncap::capture
