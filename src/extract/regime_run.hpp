#pragma once
// `kerncap extract KERNEL --regimes`: one capture per launch shape of one kernel, in two runs
// of the application. The first runs it in profile mode (CUPTI records of every launch: its
// shape and GPU time) and groups the kernel's launches into regimes (profile/regimes.hpp);
// the second captures the first launch of each regime as the targets of one multi-target run
// (multi_run.hpp), all sharing one chunk store. OUT/regimes.json (format/regimes_index.hpp)
// says what each capture stands for.
#include "extract/multi_run.hpp"
#include "format/regimes_index.hpp"

namespace kerncap::extract {

struct RegimeResult {
  MultiResult captures;
  format::RegimesIndex index;
  std::vector<std::string> notes;  // said to the user (other kernels matched, other processes, ...)
};

// r.kernel (and r.regex) name the kernel; r.targets must be empty. At most `max` regimes
// (the largest shares). Throws Error(Usage) for a bad request, Error(Input) when no launch
// of a matching kernel was recorded; regimes not captured are in the index (why), and the
// caller fails on them as for several targets.
RegimeResult run_regimes(const Request& r, size_t max);

}  // namespace kerncap::extract
