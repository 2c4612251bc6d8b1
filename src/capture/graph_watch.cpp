// LaunchWatcher's graph launches: every kernel node an executable graph runs counts as one
// launch of its kernel, in the executable's node order (GraphExec), so that
// `extract --dispatch N` reaches kernels that only run inside graphs and agrees with
// `profile`. The target found inside a launch goes to GraphTargetCapture at the launch's
// API entry, before the graph runs.
#include "capture/events.hpp"
#include "capture/watcher.hpp"
#include "common/log.hpp"
#include "names/demangle.hpp"

namespace kerncap::capture {

void LaunchWatcher::watch_graphs(GraphTracker& tracker, GraphTargetCapture& target) {
  graphs_ = &tracker;
  graph_target_ = &target;
}

void LaunchWatcher::on_graph_launch(const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_ENTER || done_) return;
  // cuGraphLaunch and cuGraphLaunch_ptsz both take (CUgraphExec, CUstream).
  const auto* p = static_cast<const cuGraphLaunch_ptsz_params*>(cb->functionParams);
  std::shared_ptr<const GraphExec> g = graphs_->launched(p->hGraphExec);
  if (!g) {
    // Instantiated before kerncap was loaded, or unreadable (warned then).
    std::lock_guard lk(mu_);
    if (!graph_note_) {
      graph_note_ = true;
      emit(format::events::graph_launch());
    }
    return;
  }
  if (driver_.stream_is_capturing(p->hStream)) {
    // The graph does not run now: the driver either makes it a child node of the graph being
    // captured (it runs only with that one) or refuses the launch, which is decided after this
    // API entry. Either way its kernels are not counted here.
    for (const auto& n : g->nodes) {
      if (!n.kernel) continue;
      std::lock_guard lk(mu_);
      const std::vector<int> live = waiting(matching(n.kernel->mangled));
      if (live.empty()) continue;
      const std::string dem = names::demangle(n.kernel->mangled);
      if (!nested_note_)
        log::warn("a CUDA graph holding {} was launched on a stream that is itself being captured into another "
                  "graph: that launch does not run now, and kernels inside nested graphs cannot be captured",
                  dem);
      nested_note_ = true;
      nlohmann::json line = format::events::skipped(n.kernel->mangled, format::events::SkipReason::NestedGraph);
      if (multi_) format::events::add_targets(line, live);
      emit(std::move(line));
    }
    return;
  }
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const GraphNode& n = g->nodes[i];
    if (!n.kernel || !n.enabled) continue;
    uint64_t launch_index = 0;
    const int t = is_target(n.kernel->mangled, p->hStream, &launch_index, false);
    if (t < 0) {
      if (done_) return;  // every target taken, or claimed by another process
      continue;
    }
    EventTargetScope scope(event_target(t));
    const std::string why = split_refusal(*g, i);
    if (!why.empty()) {
      const std::string msg = "cannot capture " + names::demangle(n.kernel->mangled) + " inside a CUDA graph: " + why;
      log::warn("{}", msg);
      emit(format::events::error(msg));
      if (done_) return;
      continue;
    }
    // Other targets still waiting: the application must go on with its own results, so its
    // memory is kept and put back (as with --continue), and this launch's later nodes may
    // hold them.
    const bool keep_running = config_.keep_running || !done_;
    graph_target_->capture(GraphTarget{cb, p->hGraphExec, p->hStream, g.get(), i, launch_index, event_target(t), keep_running});
    if (done_) return;
  }
}

void LaunchWatcher::report_unlaunched_graphs() {
  if (done_ || !graphs_) return;
  for (const std::string& mangled : graphs_->unlaunched_kernels()) {
    std::lock_guard lk(mu_);
    const std::vector<int> live = waiting(naming(mangled, names::demangle(mangled)));
    if (live.empty()) continue;
    log::warn("{} is in a CUDA graph that was instantiated but never launched, so it never ran there",
              names::demangle(mangled));
    nlohmann::json line = format::events::skipped(mangled, format::events::SkipReason::UnlaunchedGraph);
    if (multi_) format::events::add_targets(line, live);
    emit(std::move(line));
  }
}

}  // namespace kerncap::capture
