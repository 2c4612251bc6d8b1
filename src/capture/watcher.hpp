#pragma once
// Capture mode's decisions, made on every CUPTI callback: track allocations and code
// images, and for each kernel launch decide whether it is a target — a target's pattern
// matches, it runs on the chosen device (Config::device), it is that target's Nth match
// (its dispatch), its stream is not capturing a graph,
// no autotuner benchmark is running (the ignore window), and no other process of the
// application claimed that target first (its OUT/.kerncap/claim). At a target it hands
// over to TargetCapture, at entry and again at the same launch's exit. Several targets
// (Config::targets) are counted independently; the watcher is done when every one is
// taken, and the capture of the last one stops the application (without --continue).
//
// No CUDA call is made here: the driver is reached through LaunchQueries, so a unit test
// drives this class with fake CUpti_CallbackData (tests/unit/capture_watcher_test.cpp).
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/config.hpp"
#include "capture/graph_seams.hpp"
#include "capture/graph_tracker.hpp"
#include "capture/inventory.hpp"
#include "capture/open_captures.hpp"
#include "capture/seams.hpp"

namespace kerncap::capture {

// The ignore window: launches made while the depth is above zero are not counted. The
// Triton shim brackets autotuner benchmarks with kerncap_ignore_begin/end, exported by
// libkerncap.so (injection.cpp). Process-wide, any thread.
int ignore_depth();
void ignore_begin();
void ignore_end();  // never below zero

class LaunchWatcher {
 public:
  LaunchWatcher(const Config& config, Inventory& inventory, LaunchQueries& driver, TargetCapture& target);
  // Every CUPTI callback lands here (through the trampoline in injection.cpp). Callbacks
  // made while this thread is inside kerncap (ToolScope) are ignored, except module loads.
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  // The driver-API callback ids to enable.
  static std::vector<CUpti_CallbackId> driver_callback_ids();

  // Graph launches: track executables, count the kernel nodes each launch runs (in the
  // order GraphExec gives) and hand a target among them to `target` (graph_watch.cpp).
  // Without this call a graph launch is only noted.
  void watch_graphs(GraphTracker& tracker, GraphTargetCapture& target);
  // At process exit: matching kernels that exist only in graphs never launched.
  void report_unlaunched_graphs();
  // At process exit: each waiting target's last matching launch index, when it was not
  // written as it came (match events are sparse: see is_target).
  void report_matches();
  // At process exit, while a target still waits: its matching kernels in the loaded code
  // images that the host never launched (a device-side launch, or a kernel not reached), as
  // `unlaunched` events, so that the launcher can say why nothing matched.
  void report_unlaunched_kernels();

  // Called once, when kernel records for the in-app time are first wanted: at the counted
  // match whose index reaches in_app_window_start(dispatch) of any waiting target (the first
  // match unless the dispatch is far), before that launch is made. Several targets: the
  // earliest window.
  void on_in_app_window(void (*hook)()) { window_hook_ = hook; }
  bool done() const { return done_; }  // every target was taken, failed, or claimed by another process
  uint64_t launches() const;            // kernel launches seen (counted or not)

 private:
  void on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void on_graph_launch(const CUpti_CallbackData* cb);
  // check_stream: skip the launch when `stream` is capturing (false for graph nodes, whose
  // launch was checked once).
  // The target (index into targets_) this launch is, or -1. `name_matches` (optional): whether
  // the name matches any target's pattern, whatever the answer.
  int is_target(std::string_view mangled, CUstream stream, uint64_t* launch_index, bool check_stream = true,
                bool* name_matches = nullptr);
  // The hot path: a launch of a function handle already known to be no target's (its name
  // matches no pattern) is counted and nothing else: no name string, no demangling, no event.
  // Forgotten when modules or libraries unload (a later function may get the same handle).
  bool known_skip(CUfunction f, CUcontext ctx);
  void remember_skip(CUfunction f, CUcontext ctx);
  bool claim(size_t target);
  // Under mu_: the targets whose pattern names `mangled` (cached; emits "seen" once).
  const std::vector<int>& matching(std::string_view mangled);
  // The targets whose pattern names a kernel (no event).
  std::vector<int> naming(const std::string& mangled, const std::string& demangled) const;
  // Under mu_: of those, the ones still waiting.
  std::vector<int> waiting(const std::vector<int>& targets) const;
  void waiting(const std::vector<int>& targets, std::vector<int>* out) const;  // into *out (no allocation once grown)
  bool all_done() const;  // under mu_
  // The index for events and TargetLaunch: -1 with one target (its lines stay as before).
  int event_target(int target) const { return multi_ ? target : -1; }
  // Config::device: false for a launch on another device (not counted, noted once per name).
  bool on_chosen_device(std::string_view mangled, CUcontext ctx);
  // A launch's exit when an image arrived during it: bind the image to the launched module.
  void bind_loaded_image(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, uint64_t hash);

  const Config& config_;
  Inventory& inventory_;
  LaunchQueries& driver_;
  TargetCapture& target_;
  std::atomic<bool> done_{false};
  const std::vector<format::TargetSpec> targets_;  // format::effective_targets(config_)
  const bool multi_;                               // Config::targets was given
  // A target launch between its entry and its exit.
  struct Pending {
    uint32_t correlation = 0;
    std::thread::id thread;
    int target = -1;
  };
  mutable std::mutex mu_;  // guards the fields below
  std::vector<Pending> pending_;
  std::atomic<size_t> pending_count_{0};  // pending_.size(), read without the lock at every launch's exit
  struct Slot {
    uint64_t matched = 0;  // matching launches counted
    bool done = false;     // taken (or failed), or claimed by another process
    uint64_t last_emitted = 0;  // the last "match" index written
    std::string last_name;      // the kernel of a match not written as it came
  };
  std::vector<Slot> slots_;  // one per target
  // Looked up by the name CUPTI hands over, without copying it into a string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, std::vector<int>, NameHash, std::equal_to<>> name_matches_;
  std::vector<int> live_;  // is_target's targets still waiting (kept to spare an allocation a launch)
  OpenCaptures captures_;  // stream captures open in the process
  std::unordered_set<std::string> ignored_names_;
  std::atomic<uint64_t> launches_{0};  // also counted without the lock (known_skip's fast path)
  bool graph_note_ = false;
  bool nested_note_ = false;
  GraphTracker* graphs_ = nullptr;
  GraphTargetCapture* graph_target_ = nullptr;
  std::unordered_set<std::string> other_device_names_;
  struct HandleHash {
    size_t operator()(const std::pair<const void*, const void*>& k) const noexcept {
      return std::hash<const void*>()(k.first) * 31 + std::hash<const void*>()(k.second);
    }
  };
  std::unordered_set<std::pair<const void*, const void*>, HandleHash> skip_handles_;  // (function, context)
  // Changes whenever skip_handles_ is cleared (a thread's cached last skip is then stale).
  std::atomic<uint64_t> skip_epoch_{new_skip_epoch()};
  static uint64_t new_skip_epoch();
  void clear_skips();  // under mu_
  void (*window_hook_)() = nullptr;
  bool window_open_ = false;
};

}  // namespace kerncap::capture
