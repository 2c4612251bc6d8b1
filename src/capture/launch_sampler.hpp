#pragma once
// Profile mode's sampled timing (Config::profile_sample = N): every kernel launch is counted
// on the application thread, cheaply — a function handle's name is looked up once, and
// consecutive launches of one kernel fold into one run — while CUPTI's kernel records (the
// per-launch cost of profiling) are on only for the process's first kSampleExactLaunches
// launches and then for one window of kSampleWindow launches in every N. The runs keep the
// exact count and order of the launches, so calls and extract's launch indices stay exact;
// only the durations are a sample. A CUDA graph launch ends the sampling: records stay on
// from then (the kernels a graph runs are known only from their records).
//
// Pure bookkeeping (no CUDA, no CUPTI): profiler.cpp feeds it and switches the records when
// told; unit tested with fake launches (tests/unit/capture_launch_sampler_test.cpp).
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "capture/open_captures.hpp"
#include "format/profile_records.hpp"

namespace kerncap::capture {

class LaunchSampler {
 public:
  // What the caller does with the kernel records after a launch or a graph launch.
  enum class Records { Keep, On, Off };
  // `intern`: a kernel name's id in the record file (RecordWriter::name_id), asked once per
  // function handle. `resolve`: the name of a handle when CUPTI gave none.
  using Intern = uint32_t (*)(void* user, std::string_view mangled);
  using Resolve = std::string (*)(const void* function);
  LaunchSampler(uint32_t period, Intern intern, Resolve resolve, void* user);

  // Records are on at start (the first launches are all timed).
  static constexpr bool kRecordsAtStart = true;

  // One kernel launch, at API entry, before the driver makes it. `symbol` may be null.
  // `pending`: the runs held after it (for the caller to write some out now and then).
  Records on_launch(const void* function, const void* context, const char* symbol, uint32_t correlation,
                    bool benchmark, size_t* pending = nullptr);
  // A CUDA graph launch, at API entry: ends the current run and the sampling.
  Records on_graph_launch();
  // Forget the handle cache (modules unloaded: a later function may get the same handle).
  void forget_handles();
  // Stream capture began / ended somewhere in the process (cuStreamBeginCapture*, cuStreamEndCapture
  // at API exit, when they took effect). A launch into a capturing stream adds a graph node and
  // runs only when the graph is launched, so it is not a launch; while no capture is open (nearly
  // always) the caller need not ask the driver about each launch's stream.
  void on_capture_begin() { captures_.begin(); }
  void on_capture_end() { captures_.end(); }
  bool captures_open() const { return captures_.any(); }
  OpenCaptures& captures() { return captures_; }

  // The runs completed so far (the current one stays open unless `all`), in launch order.
  std::vector<format::LaunchRun> take_runs(bool all);
  size_t pending_runs() const;
  uint64_t launches() const;
  bool sampling() const;  // still duty-cycling (no graph launch yet)
  // Whether the records should be on now: the caller applies this under its own lock, so
  // two threads' switches cannot land in the wrong order.
  bool records_wanted() const;

  // Whether launch number `index` (from 0) of a process falls in a timed window.
  static bool timed(uint64_t index, uint32_t period);

 private:
  struct HandleHash {
    size_t operator()(const std::pair<const void*, const void*>& k) const noexcept {
      return std::hash<const void*>()(k.first) * 31 + std::hash<const void*>()(k.second);
    }
  };
  Records switch_to(bool on);

  const uint32_t period_;
  Intern intern_;
  Resolve resolve_;
  void* user_;
  mutable std::mutex mu_;
  std::unordered_map<std::pair<const void*, const void*>, uint32_t, HandleHash> names_;  // (function, context)
  std::vector<format::LaunchRun> runs_;  // the last one is open
  bool open_ = false;
  uint64_t launches_ = 0;
  bool records_on_ = kRecordsAtStart;
  bool sampling_ = true;
  OpenCaptures captures_;
};

}  // namespace kerncap::capture
