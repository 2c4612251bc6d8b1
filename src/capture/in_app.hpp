#pragma once
// The in-app time of the captured kernel: CUPTI kernel records of the application's launches
// (in_app_records.cpp), kept per kernel name and launch shape (grid, block, dynamic shared
// memory): a kernel launched with another shape does other work, so only launches shaped like
// the captured one are compared with its replay. At the capture, the median over the kept
// launches of the target's shape (the captured one included) goes into the manifest, with how
// many launches it is over. The first launch of a shape is kept apart: it runs with cold
// caches and TLBs and often before the clocks ramp up, so it counts only when it is the only one.
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
};

class InAppTimes {
 public:
  static constexpr size_t kKeep = 256;     // durations kept per kernel and shape (the latest)
  static constexpr size_t kShapes = 64;    // shapes kept per kernel (the most recently launched)

  // One kernel record. `name` is CUPTI's string, shared by every record of the kernel and
  // alive as long as CUPTI: records are grouped by its address, its text copied once.
  void add(const char* name, const LaunchShape& shape, uint64_t duration_ns);
  // The kept launches of `mangled` with `shape`: the median of those after the first, or the
  // first alone when there is no other; empty when none was recorded.
  std::optional<InAppTime> time(const std::string& mangled, const LaunchShape& shape) const;

 private:
  struct Shape {
    LaunchShape shape;
    uint64_t seen = 0;      // launches recorded, the first included
    uint64_t first_ns = 0;  // the first launch's duration
    uint64_t last_use = 0;  // for replacing the least recently launched shape
    std::vector<uint64_t> ring;  // the later launches, at most kKeep; `next` is where the next goes
    size_t next = 0;
  };
  struct Kernel {
    std::string name;
    std::vector<Shape> shapes;
  };
  mutable std::mutex mu_;
  uint64_t clock_ = 0;
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
// duration; a record without an end (timestamps not filled in yet) is left out.
void add_kernel_record(InAppTimes& times, const CUpti_ActivityKernel10& record);

// The process's one instance (capture mode's activity callback and the capturer share it).
InAppTimes& in_app_times();

}  // namespace kerncap::capture
