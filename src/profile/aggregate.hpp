#pragma once
// From per-process records to per-kernel statistics: calls, total/average/median time,
// share of GPU time, the most common launch shape, classification, and for every
// process the launch indices to hand to `kerncap extract --dispatch`.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "format/profile_records.hpp"
#include "names/classify.hpp"

namespace kerncap::profile {

// The record files are a cross-process contract (format/profile_records.hpp); this folder
// only reads them.
using format::DeviceInfo;
using format::KernelRecord;
using format::MemRecord;
using format::ProcessInfo;
using format::ProcessRecords;
using format::read_record_file;
using format::read_records;
using format::RecordError;

// One process's launches of one kernel.
struct KernelInProcess {
  int64_t pid = 0;
  uint64_t calls = 0;
  // For each launch made with cuLaunchKernel & co. or run as a node of a CUDA graph
  // launch (not launched from the device), in launch order: the value of `extract --dispatch` that captures it when the pattern
  // is this kernel's mangled name (0 = first). `extract` counts, per process, launches
  // whose mangled or demangled name contains the pattern, so a name contained in another
  // kernel's name (triton_poi_fused_add_1 in ..._add_10) counts those too; this list
  // already accounts for that.
  std::vector<uint64_t> dispatch;
  uint64_t graph_calls = 0;  // of `calls`, how many ran inside a CUDA graph launch (or from the device)
  // Of `calls`, how many were made inside a benchmark window (autotuners, Inductor's and
  // Triton's benchmarking, told by the Triton shim): extract does not count them, so they
  // have no `dispatch` index.
  uint64_t benchmark_calls = 0;
  int64_t rank = -1;              // the process's rank in its job (-1: not told)
  std::vector<uint32_t> devices;  // CUDA devices it ran on in this process, ascending
};

struct KernelStats {
  std::string mangled, demangled;
  names::Classification cls;
  uint64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  uint64_t benchmark_calls = 0;  // of `calls`, made inside benchmark windows (all processes)
  double avg_ns = 0, median_ns = 0, stddev_ns = 0, percent = 0;
  // The most common launch configuration among its calls.
  std::array<int32_t, 3> grid{}, block{};
  uint32_t registers = 0;
  int32_t static_shared = 0, dynamic_shared = 0;
  uint64_t shapes = 0;  // distinct grid/block/shared combinations seen
  std::vector<KernelInProcess> processes;
  // Sampled timing (`profile --sample`): `samples` of its `calls` were timed. `estimated`:
  // some were not, so total_ns is calls x the timed mean (per process) and percent follows
  // it; avg/median/min/max/stddev are over the timed launches. Calls are exact.
  uint64_t samples = 0;
  bool estimated = false;
};

struct ProcessSummary {
  ProcessInfo info;
  std::string file;
  std::vector<DeviceInfo> devices;   // devices it ran kernels on (names when CUPTI said)
  uint64_t kernels = 0, kernel_ns = 0;
  uint64_t memcpys = 0, memcpy_ns = 0, memcpy_bytes = 0;
  uint64_t memsets = 0, memset_ns = 0, memset_bytes = 0;
  uint64_t dropped = 0;
  bool complete = false;
  std::string end_reason;
  std::vector<RecordError> errors;
  // Sampled timing: N of `--sample N` (0: every launch timed) and how many launches were
  // timed (`kernels` counts them all; kernel_ns is then an estimate).
  uint32_t sample_period = 0;
  uint64_t timed = 0;
};

// Kernel time of one rank on one device (multi-process jobs: `profile` shows the split).
struct RankDevice {
  int64_t rank = -1;  // -1: processes that did not tell their rank
  uint32_t device = 0;
  uint64_t launches = 0, kernel_ns = 0;
  std::vector<int64_t> pids;
};

struct Summary {
  std::vector<KernelStats> kernels;  // by total time, largest first
  std::vector<RankDevice> ranks;     // by rank, then device
  std::vector<ProcessSummary> processes;
  uint64_t launches = 0, total_kernel_ns = 0;
  uint64_t first_ns = 0, last_ns = 0;  // span of all kernel activity
  bool estimated = false;              // some kernel's total is an estimate (sampled timing)
};

Summary aggregate(const std::vector<ProcessRecords>& processes);

// For each of p.kernels (same order): its `extract --dispatch` index, or -1 for a kernel
// launched from the device (extract cannot reach it) or inside a benchmark window (extract
// does not count it). In a sampled process (p.sample_period) the launches are counted from
// p.runs, and a timed launch outside graphs has no index here (-1): which launch of its run
// it was is not recorded; the kernels of graph launches have theirs.
// `demangled[i]` is the demangled form of p.names[i].
std::vector<int64_t> dispatch_indices(const ProcessRecords& p, const std::vector<std::string>& demangled);

}  // namespace kerncap::profile
