#pragma once
// A window of one CUDA graph launch (`kerncap window extract --graph`, docs/window.md): what the
// executable's nodes are as the window's operations, in the order the graph tracker gives them
// (GraphExec::nodes, dependencies first: order_topologically, the one ordering the one-kernel
// capture counts launches by). Kernel nodes become launches (described by the recorder's
// WindowOps, as every launch is); memset nodes memsets; copies between device memory
// device-to-device copies; copies from host memory host-to-device copies, their bytes read
// here, at the graph launch's entry. Empty and event nodes do nothing a one-stream replay
// after a synchronised BEFORE needs; disabled nodes do not run. Anything else (a host
// callback, a child graph, graph memory allocation or free, a conditional, semaphores,
// batched memory operations, copies to the host or through arrays) refuses the window, with
// the node's kind named. No CUDA call: unit tested with fake graphs (capture_window_graph_test.cpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "capture/graph_model.hpp"
#include "format/window.hpp"

namespace kerncap::capture {

// One node of the graph as a window operation: a kernel node (`kernel`, to be described by
// WindowOps) or a memory operation made here (`op`).
struct GraphWindowStep {
  size_t node = 0;  // index into GraphExec::nodes
  bool kernel = false;
  std::optional<format::WindowOp> op;  // memset or copy
};

// Whether [addr, addr + bytes) lies in memory the capture tracks (an allocation's).
using IsTracked = std::function<bool(uint64_t addr, uint64_t bytes)>;

// The window's steps in GraphExec's order, or nullopt with `why` (naming the node and its kind).
// At least one is a kernel: the first kernel step is the capture's own launch (the manifest's),
// whatever memsets or copies come before it. `h2d_budget`: the host bytes a window may keep
// (format::kMaxWindowH2DBytes).
std::optional<std::vector<GraphWindowStep>> plan_graph_window(const GraphExec& g, const IsTracked& tracked,
                                                             uint64_t h2d_budget, std::string* why);

// Whether the graph holds a kernel node whose mangled name `matches` (the graph window's pattern).
bool graph_has_kernel(const GraphExec& g, const std::function<bool(const std::string& mangled)>& matches);

}  // namespace kerncap::capture
