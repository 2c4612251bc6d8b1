#include "capture/graph_tracker.hpp"

#include <atomic>
#include <cstddef>

#include "common/log.hpp"

namespace kerncap::capture {
namespace {

bool succeeded(const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_EXIT) return false;
  const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
  return rv && *rv == CUDA_SUCCESS;
}

// Every instantiation entry point's parameters start with (CUgraphExec*, CUgraph).
struct InstantiateHead {
  CUgraphExec* exec;
  CUgraph graph;
};
static_assert(offsetof(cuGraphInstantiateWithFlags_params, hGraph) == offsetof(InstantiateHead, graph));
static_assert(offsetof(cuGraphInstantiateWithParams_params, hGraph) == offsetof(InstantiateHead, graph));
static_assert(offsetof(cuGraphInstantiate_v2_params, hGraph) == offsetof(InstantiateHead, graph));

}  // namespace

const std::vector<CUpti_CallbackId>& GraphTracker::callback_ids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecBatchMemOpNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams,
      CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled,
      CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy,
  };
  return ids;
}

bool GraphTracker::on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      const auto* p = static_cast<const InstantiateHead*>(cb->functionParams);
      if (succeeded(cb) && p->exec) instantiated(*p->exec, p->graph);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2: {
      // Both versions start with (CUgraphExec, CUgraph).
      const auto* p = static_cast<const cuGraphExecUpdate_v2_params*>(cb->functionParams);
      if (succeeded(cb)) updated(p->hGraphExec, p->hGraph);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams: {
      const auto* p = static_cast<const cuGraphExecKernelNodeSetParams_params*>(cb->functionParams);
      if (succeeded(cb) && p->nodeParams) kernel_params_set(p->hGraphExec, p->hNode, kernel_node_view(*p->nodeParams));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2: {
      const auto* p = static_cast<const cuGraphExecKernelNodeSetParams_v2_params*>(cb->functionParams);
      if (succeeded(cb) && p->nodeParams) kernel_params_set(p->hGraphExec, p->hNode, kernel_node_view(*p->nodeParams));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams: {
      const auto* p = static_cast<const cuGraphExecNodeSetParams_params*>(cb->functionParams);
      if (!succeeded(cb) || !p->nodeParams) return true;
      if (p->nodeParams->type == CU_GRAPH_NODE_TYPE_KERNEL)
        kernel_params_set(p->hGraphExec, p->hNode, kernel_node_view(p->nodeParams->kernel));
      else if (p->nodeParams->type != CU_GRAPH_NODE_TYPE_HOST && p->nodeParams->type != CU_GRAPH_NODE_TYPE_EVENT_RECORD &&
               p->nodeParams->type != CU_GRAPH_NODE_TYPE_WAIT_EVENT)
        mark_stale(p->hGraphExec, std::string("the application changed a ") + node_type_name(p->nodeParams->type) +
                                      " node of this graph after instantiating it (cuGraphExecNodeSetParams), "
                                      "which kerncap does not follow");
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecBatchMemOpNodeSetParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams: {
      // All start with (CUgraphExec, CUgraphNode, ...).
      const auto* p = static_cast<const cuGraphExecMemsetNodeSetParams_params*>(cb->functionParams);
      if (succeeded(cb))
        mark_stale(p->hGraphExec, std::string("the application changed a node of this graph after instantiating it (") +
                                      cb->functionName + "), which kerncap does not follow");
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled: {
      const auto* p = static_cast<const cuGraphNodeSetEnabled_params*>(cb->functionParams);
      if (succeeded(cb)) enabled_set(p->hGraphExec, p->hNode, p->isEnabled != 0);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy: {
      const auto* p = static_cast<const cuGraphExecDestroy_params*>(cb->functionParams);
      if (succeeded(cb)) destroyed(p->hGraphExec);
      return true;
    }
    default:
      return false;
  }
}

void GraphTracker::instantiated(CUgraphExec exec, CUgraph graph) {
  auto g = std::make_shared<GraphExec>();
  std::string why;
  const bool read = queries_.read_graph(graph, g.get(), &why);
  // The clone goes with the last snapshot that refers to it, whatever happens next.
  GraphQueries* q = &queries_;
  g->copy_owner = std::shared_ptr<void>(static_cast<void*>(g->copy), [q](void* c) {
    if (c) q->release(static_cast<CUgraph>(c));
  });
  const bool ordered = read && order_topologically(g->nodes);
  if (read && !ordered) why = "its dependencies form a cycle";
  if (!ordered) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      log::warn("cannot read a CUDA graph the application instantiated ({}): kernels it runs are not counted", why);
    else
      log::debug("cannot read a CUDA graph the application instantiated ({})", why);
    return;
  }
  std::lock_guard lk(mu_);
  execs_[exec] = std::move(g);
}

void GraphTracker::updated(CUgraphExec exec, CUgraph graph) {
  auto g = std::make_shared<GraphExec>();
  std::string why;
  const bool read = queries_.read_graph(graph, g.get(), &why);
  GraphQueries* q = &queries_;
  g->copy_owner = std::shared_ptr<void>(static_cast<void*>(g->copy), [q](void* c) {
    if (c) q->release(static_cast<CUgraph>(c));
  });
  std::lock_guard lk(mu_);
  auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  if (!read || !order_topologically(g->nodes) || g->nodes.size() != it->second->nodes.size()) {
    GraphExec* w = writable(exec);
    w->stale = "the application updated this graph (cuGraphExecUpdate) in a way kerncap could not follow" +
               (why.empty() ? std::string() : ": " + why);
    return;
  }
  // An update keeps the executable's nodes (paired in the same order, the topology being
  // identical): later per-node calls still name the nodes of the graph first instantiated.
  const GraphExec& old = *it->second;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    g->nodes[i].source = old.nodes[i].source;
    g->nodes[i].enabled = old.nodes[i].enabled;
  }
  g->launched = old.launched;
  it->second = std::move(g);
}

GraphExec* GraphTracker::writable(CUgraphExec exec) {
  auto it = execs_.find(exec);
  if (it == execs_.end()) return nullptr;
  // Only this map holds it: nobody else can see the change (snapshots are taken under mu_).
  if (it->second.use_count() > 1) it->second = std::make_shared<GraphExec>(*it->second);
  return const_cast<GraphExec*>(it->second.get());
}

void GraphTracker::kernel_params_set(CUgraphExec exec, CUgraphNode node, const KernelNodeView& view) {
  GraphKernel k;
  std::string why;
  const bool read = queries_.read_kernel(view, &k, &why);
  std::lock_guard lk(mu_);
  GraphExec* g = writable(exec);
  if (!g) return;
  for (auto& n : g->nodes) {
    if (n.source != node || !n.kernel) continue;
    if (!read) {
      g->stale = "cannot read the kernel parameters the application set on a node of this graph: " + why;
      return;
    }
    k.attrs = std::move(n.kernel->attrs);  // not part of the node parameters
    n.kernel = std::move(k);
    return;
  }
}

void GraphTracker::mark_stale(CUgraphExec exec, const std::string& why) {
  std::lock_guard lk(mu_);
  if (GraphExec* g = writable(exec)) g->stale = why;
}

void GraphTracker::enabled_set(CUgraphExec exec, CUgraphNode node, bool enabled) {
  std::lock_guard lk(mu_);
  if (GraphExec* g = writable(exec))
    for (auto& n : g->nodes)
      if (n.source == node) n.enabled = enabled;
}

void GraphTracker::destroyed(CUgraphExec exec) {
  std::lock_guard lk(mu_);
  auto it = execs_.find(exec);
  if (it == execs_.end()) return;
  if (!it->second->launched)
    for (const auto& n : it->second->nodes)
      if (n.kernel) unlaunched_destroyed_.insert(n.kernel->mangled);
  execs_.erase(it);
}

std::shared_ptr<const GraphExec> GraphTracker::launched(CUgraphExec exec) {
  std::lock_guard lk(mu_);
  auto it = execs_.find(exec);
  if (it == execs_.end()) return nullptr;
  if (!it->second->launched) writable(exec)->launched = true;
  return it->second;
}

std::set<std::string> GraphTracker::unlaunched_kernels() const {
  std::lock_guard lk(mu_);
  std::set<std::string> out = unlaunched_destroyed_;
  for (const auto& [exec, g] : execs_)
    if (!g->launched)
      for (const auto& n : g->nodes)
        if (n.kernel) out.insert(n.kernel->mangled);
  return out;
}

}  // namespace kerncap::capture
