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
// With `need_kernel` (a graph launch's own window) at least one is a kernel: the first kernel
// step is the capture's own launch (the manifest's), whatever memsets or copies come before it;
// a graph launched inside a FROM..TO window may hold memory operations only. `h2d_budget`: the
// host bytes a window may still keep (format::kMaxWindowH2DBytes).
std::optional<std::vector<GraphWindowStep>> plan_graph_window(const GraphExec& g, const IsTracked& tracked,
                                                             uint64_t h2d_budget, std::string* why,
                                                             bool need_kernel = true);

// What a graph launch does to device memory, node by node in GraphExec's order, for the live-out
// observation after a window (window_liveout.hpp): each enabled kernel node (its parameter bytes
// are what a launch's are), the device bytes a memset or copy node writes and those a copy
// reads, and `opaque` for a node whose reads cannot be seen (a host callback, a child graph, a
// conditional, ...). A pitched copy reads the whole span from its first byte to its last (more
// than it reads: errs towards live); a pitched write is not reported (errs towards live too).
struct GraphAccessVisitor {
  std::function<void(const GraphKernel&)> kernel;
  std::function<void(uint64_t addr, uint64_t bytes, const std::string& what)> read;
  std::function<void(uint64_t addr, uint64_t bytes, const std::string& what)> write;
  std::function<void(const std::string& what)> opaque;
};
void visit_graph_accesses(const GraphExec& g, const GraphAccessVisitor& v);

// Whether the graph holds a kernel node whose mangled name `matches` (the graph window's pattern).
bool graph_has_kernel(const GraphExec& g, const std::function<bool(const std::string& mangled)>& matches);

}  // namespace kerncap::capture
