#pragma once
// The in-app time of the captured kernel: CUPTI kernel records of the application's launches
// (in_app_records.cpp), kept per kernel name and launch shape (grid, block, dynamic shared
// memory): a kernel launched with another shape does other work, so only launches shaped like
// the captured one are compared with its replay. At the capture, the median over the kept
// launches of the target's shape goes into the manifest, with how many launches it is over.
// Two launches are kept apart, each counted only when nothing else is left: the first of a shape
// (cold caches and TLBs, often before the clocks ramp up) and the captured one (run right after
// kerncap's snapshot; on an H200 it was the slowest of 11 launches in several cases, up to 22 %).
// Pure bookkeeping, fed by the activity buffer callback; thread-safe.
#include <cupti.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kerncap::capture {

struct LaunchShape {
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  uint32_t dynamic_shared = 0;
  bool operator==(const LaunchShape&) const = default;
};

struct InAppTime {
  double median_ns = 0;
  uint64_t samples = 0;   // launches the median is over
  uint64_t launches = 0;  // launches of this kernel with this shape seen (the first included)
  // The spread of those launches, the first (cold) one, and the latest (at a capture: the
  // captured launch itself, run after kerncap's snapshot).
  uint64_t min_ns = 0, max_ns = 0, first_ns = 0, latest_ns = 0;
  // Over the same launches, medians of what came before each: the GPU's idle time (from the
  // previous kernel's end to its start; 0: queued behind other work), and the GPU time of the
  // other kernels recorded since the previous launch of this kernel and shape (0: launched
  // again and again with nothing between, as a loop of one op does). The second says whether
  // the application's other work could have evicted this kernel's data from L2 between two
  // launches (replay's --cache auto).
  double median_idle_ns = 0;
  double median_between_ns = 0;
};

class InAppTimes {
 public:
  static constexpr size_t kKeep = 256;     // durations kept per kernel and shape (the latest)
  static constexpr size_t kShapes = 64;    // shapes kept per kernel (the most recently launched)

  // One kernel record. `name` is CUPTI's string, shared by every record of the kernel and
  // alive as long as CUPTI: records are grouped by its address, its text copied once.
  // `idle_ns`: idle_before's answer for it.
  void add(const char* name, const LaunchShape& shape, uint64_t duration_ns, uint64_t idle_ns = 0);
  // The GPU's idle time before a kernel that ran from start_ns to end_ns: its start less the
  // latest end of the kernels recorded before it (records come in completion order), 0 when
  // it was queued behind one or overlapped it.
  uint64_t idle_before(uint64_t start_ns, uint64_t end_ns);
  // The kept launches of `mangled` with `shape`: the median of those after the first, or the
  // first alone when there is no other; empty when none was recorded. `leave_out_latest`: the
  // latest launch is the captured one, which ran right after kerncap's snapshot (the GPU
  // synchronised, L2 and TLBs full of the snapshot's reads), not as the application runs it:
  // it is left out too while another launch after the first remains.
  std::optional<InAppTime> time(const std::string& mangled, const LaunchShape& shape,
                                bool leave_out_latest = false) const;

 private:
  struct Launch {
    uint64_t ns = 0;          // its duration
    uint64_t idle_ns = 0;     // the GPU's idle time before it
    uint64_t between_ns = 0;  // other kernels' GPU time since the previous launch of the shape
  };
  struct Shape {
    LaunchShape shape;
    uint64_t seen = 0;      // launches recorded, the first included
    uint64_t first_ns = 0;  // the first launch's duration
    uint64_t last_use = 0;  // for replacing the least recently launched shape
    uint64_t busy_mark = 0; // busy_ns_ right after its latest launch was recorded
    std::vector<Launch> ring;  // the later launches, at most kKeep; `next` is where the next goes
    size_t next = 0;
  };
  struct Kernel {
    std::string name;
    std::vector<Shape> shapes;
  };
  mutable std::mutex mu_;
  uint64_t clock_ = 0;
  uint64_t last_end_ns_ = 0;
  uint64_t busy_ns_ = 0;  // summed durations of every kernel recorded so far
  std::unordered_map<const char*, Kernel> kernels_;
};

// Capture mode turns kernel records on this many matches before a target's dispatch (with a
// far --dispatch): the in-app time keeps the latest kKeep launches per shape, and the margin
// covers launches of the same name in other shapes. The launches before pay nothing for
// records (CUPTI stamps every kernel while they are on).
inline constexpr uint64_t kInAppLead = 4 * InAppTimes::kKeep;
// The match index (from 0) of a target with `dispatch` at which its records are wanted: 0
// (the first match, as before) when the dispatch is within kInAppLead of it.
constexpr uint64_t in_app_window_start(uint64_t dispatch) {
  return dispatch > kInAppLead ? dispatch - kInAppLead : 0;
}

// One CUPTI kernel record (CONCURRENT_KERNEL or KERNEL) into `times`: its name, shape and
// duration; a record without an end (timestamps not filled in yet) and kerncap's own kernels
// (kerncap_*) are left out.
void add_kernel_record(InAppTimes& times, const CUpti_ActivityKernel10& record);

// The process's one instance (capture mode's activity callback and the capturer share it).
InAppTimes& in_app_times();

}  // namespace kerncap::capture
