#pragma once
// `kerncap extract KERNEL --regimes`: one capture per launch shape of a kernel, in two runs of
// the application. The first runs it in profile mode (CUPTI records of every launch: its
// shape and GPU time) and groups the kernel's launches into regimes (profile/regimes.hpp);
// the second captures the first launch of each regime as the targets of one multi-target run
// (multi_run.hpp), all sharing one chunk store. OUT/regimes.json (format/regimes_index.hpp)
// says what each capture stands for.
//
// Several kernels in the same two runs (`--regimes --kernel A --kernel B`, `--regimes --top
// N`: the N kernels with the most GPU time in the first run): each kernel's regime set goes to
// OUT/KK-<name>/, laid out as a one-kernel set, and OUT/regime-kernels.json
// (format/regime_kernels.hpp) lists them.
#include <string>
#include <vector>

#include "extract/multi_run.hpp"
#include "format/profile_records.hpp"
#include "format/regime_kernels.hpp"
#include "format/regimes_index.hpp"

namespace kerncap::extract {

struct RegimeSelection {
  std::vector<std::string> patterns;  // KERNEL and the --kernel values (substrings, or regexes with r.regex)
  size_t top = 0;                     // --top N: the kernels with the most GPU time in the profiled run
  size_t max = 8;                     // --max-regimes, per kernel
  // One KERNEL and no --top: OUT is the regime set itself (OUT/regimes.json).
  bool flat() const { return patterns.size() == 1 && top == 0; }
};

struct RegimeSetResult {
  std::string dir;               // under OUT ("" when OUT is the set)
  format::RegimesIndex index;
};

struct RegimeResult {
  MultiResult captures;
  std::vector<RegimeSetResult> sets;  // one per kernel, largest GPU time first
  std::vector<std::string> notes;     // said to the user (other kernels matched, other processes, ...)
};

// The kernels `sel` names in the profiled run's records, as mangled names: each pattern's
// kernel with the most GPU time (host launches, benchmarks left out), then the `top` kernels
// with the most GPU time not named yet, each kernel once. Error(Input) for a pattern nothing
// matches, Error(Usage) for a bad regex; `notes` gets what the user should hear (other matches,
// a kernel named twice, fewer kernels than --top).
std::vector<std::string> regime_kernels(const std::vector<format::ProcessRecords>& records, const RegimeSelection& sel,
                                        bool regex, std::vector<std::string>& notes);

// r.kernel and r.targets must be empty (the selection names the kernels). Throws
// Error(Usage) for a bad request, Error(Input) when no launch of a named kernel was recorded;
// regimes not captured are in their index (why), and the caller fails on them as for several
// targets.
RegimeResult run_regimes(const Request& r, const RegimeSelection& sel);

}  // namespace kerncap::extract
