#pragma once
// Kernel-only time from CUPTI activity records: each kernel's GPU start and end, with no
// launch overhead or CPU gap inside. libcupti is loaded at run time (beside our library or
// executable first, then the system's), so kerncap runs where it is missing and timing
// falls back to events (timing.cpp says so in the result's method).
#include <cstdint>
#include <string>
#include <vector>

namespace kerncap::replay {

// One kernel record, reduced to what timing needs.
struct KernelSpan {
  uint64_t start_ns = 0, end_ns = 0;
  bool ours = false;  // one of kerncap's helper kernels (name starts with "kerncap_")
};
struct KernelSum {
  uint64_t ns = 0;     // summed durations of the application's kernels
  size_t kernels = 0;  // how many
};
// Pure: sums the durations of the spans that are not ours, started at or after `since_ns`
// and have end > start.
KernelSum sum_kernels(const std::vector<KernelSpan>& spans, uint64_t since_ns = 0);
// Pure: the spans sum_kernels would count, split into `launches` launches of `per_launch`
// kernels each in the order they started (launches queued on one stream run one after the
// other): each launch's sum, or empty when the count is not launches x per_launch (a record
// lost or one too many: no launch can be told from the next).
std::vector<KernelSum> split_launches(const std::vector<KernelSpan>& spans, uint64_t since_ns, size_t per_launch,
                                      size_t launches);
// Whether a kernel name is one of kerncap's helpers.
bool is_our_kernel(const char* name);

// Records every kernel of the process while alive (one at a time per process).
class KernelClock {
 public:
  KernelClock();   // never throws: ok() says whether CUPTI records kernels
  ~KernelClock();  // disables the records
  KernelClock(const KernelClock&) = delete;
  KernelClock& operator=(const KernelClock&) = delete;

  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }  // when !ok()
  // CUPTI's clock, the time base of the records (0 when !ok()).
  uint64_t now() const;
  // Flushes CUPTI's buffers (call after the work has completed) and returns the kernels
  // recorded since the previous call that started at or after `since_ns` (a late record of
  // an earlier launch never counts twice). Flushes again until `expect` came: at once, then
  // after waits growing from 10 µs to 1 ms (a record usually completes within microseconds of
  // the stream going idle); plainly for 40 ms, then forced until 50 ms.
  KernelSum take(uint64_t since_ns, size_t expect = 1);
  // take() for `launches` launches of `per_launch` kernels queued one after the other since
  // `since_ns` (split_launches): their sums in launch order, empty when the records do not
  // split so.
  std::vector<KernelSum> take_launches(uint64_t since_ns, size_t per_launch, size_t launches);
  // Whether the kernel records stay enabled after a KernelClock ends (default false: each one
  // enables them and disables them again). A process that times over and over (the evaluation
  // pool's workers, Evaluator::prepare) keeps them: enabling and disabling CUPTI's records per
  // timing costs milliseconds. Records taken are the same either way (take() counts only
  // kernels started after its `since`).
  static void keep_enabled(bool keep);
  // What take() cost so far: seconds inside it, and flushes (a profile of the timing loop).
  double take_seconds() const { return take_s_; }
  uint64_t flushes() const { return flushes_; }

 private:
  // Flushes until `expect` kernels started at or after since_ns came (or the time is up); the
  // spans of the kernels that are not ours, and clears what was collected.
  std::vector<KernelSpan> collect(uint64_t since_ns, size_t expect);

  bool ok_ = false;
  std::string why_;
  double take_s_ = 0;
  uint64_t flushes_ = 0;
};

}  // namespace kerncap::replay
