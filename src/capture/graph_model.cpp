#include "capture/graph_model.hpp"

#include <fmt/format.h>

#include <queue>

namespace kerncap::capture {

bool order_topologically(std::vector<GraphNode>& nodes) {
  const size_t n = nodes.size();
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> waiting(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t d : nodes[i].deps) {
      if (d >= n) return false;
      users[d].push_back(i);
      ++waiting[i];
    }
  // Kahn's algorithm, smallest (id, original index) first among the ready nodes.
  using Key = std::pair<uint64_t, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (!waiting[i]) ready.push({nodes[i].id, i});
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top().second;
    ready.pop();
    order.push_back(i);
    for (size_t u : users[i])
      if (--waiting[u] == 0) ready.push({nodes[u].id, u});
  }
  if (order.size() != n) return false;
  std::vector<size_t> position(n);
  for (size_t k = 0; k < n; ++k) position[order[k]] = k;
  std::vector<GraphNode> sorted;
  sorted.reserve(n);
  for (size_t i : order) {
    sorted.push_back(std::move(nodes[i]));
    for (size_t& d : sorted.back().deps) d = position[d];
  }
  nodes = std::move(sorted);
  return true;
}

std::vector<bool> ancestors_of(const std::vector<GraphNode>& nodes, size_t target) {
  std::vector<bool> anc(nodes.size(), false);
  if (target >= nodes.size()) return anc;
  // Walking backwards from the target: every node a marked node waits for is marked.
  std::vector<bool> needed(nodes.size(), false);
  needed[target] = true;
  for (size_t k = target + 1; k-- > 0;) {
    if (!needed[k]) continue;
    for (size_t d : nodes[k].deps) {
      needed[d] = true;
      anc[d] = true;
    }
  }
  return anc;
}

const char* node_type_name(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host callback";
    case CU_GRAPH_NODE_TYPE_GRAPH: return "child graph";
    case CU_GRAPH_NODE_TYPE_EMPTY: return "empty";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "event wait";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "event record";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: return "external semaphore signal";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return "external semaphore wait";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "memory allocation";
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return "memory free";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return "batched memory operation";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
    default: return "unknown";
  }
}

std::string split_refusal(const GraphExec& exec, size_t target) {
  for (const auto& n : exec.nodes)
    switch (n.type) {
      case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      case CU_GRAPH_NODE_TYPE_MEM_FREE:
      case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      case CU_GRAPH_NODE_TYPE_GRAPH:
        return fmt::format("the graph holds a {} node, which kerncap cannot split (run the target outside a "
                           "graph, or capture it from a launch outside the graph)",
                           node_type_name(n.type));
      default:
        break;
    }
  const std::vector<bool> anc = ancestors_of(exec.nodes, target);
  for (size_t i = 0; i < exec.nodes.size(); ++i) {
    if (!anc[i]) continue;
    switch (exec.nodes[i].type) {
      case CU_GRAPH_NODE_TYPE_HOST:
      case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
      case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        return fmt::format("the target depends on a {} node, which kerncap cannot run a second time",
                           node_type_name(exec.nodes[i].type));
      default:
        break;
    }
  }
  return exec.stale;
}

}  // namespace kerncap::capture
