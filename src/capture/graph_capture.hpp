#pragma once
// Capture mode's work at a target inside a graph launch, at the cuGraphLaunch API entry
// (before any of the graph runs): synchronise; keep the application's memory (--continue);
// run the target's ancestors (kerncap's clone of the graph, reduced to them, with the
// executable's current kernel parameters); then hand the target to Capturer as an
// ordinary cuLaunchKernelEx with the node's function, shape, parameter bytes and launch
// attributes: BEFORE, launch, AFTER, publish. Replay is an ordinary launch. Without
// --continue the capturer stops the application; with it, the memory is put back and the
// application's graph launch then runs the whole graph as it would have.
#include "capture/graph_seams.hpp"
#include "capture/inventory.hpp"
#include "capture/seams.hpp"

namespace kerncap::capture {

class GraphCapturer final : public GraphTargetCapture {
 public:
  // No Config: what differs per target (its output, --continue) comes with each GraphTarget.
  GraphCapturer(const Inventory& inventory, TargetCapture& capturer) : inventory_(inventory), capturer_(capturer) {}
  void capture(const GraphTarget& target) override;

 private:
  void run(const GraphTarget& target, bool* ran);  // *ran: the application's memory may have changed

  const Inventory& inventory_;
  TargetCapture& capturer_;
};

}  // namespace kerncap::capture
