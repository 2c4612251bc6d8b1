#pragma once
// `kerncap validate OUT` where OUT is a regime set (`extract KERNEL --regimes`, OUT/regimes.json):
// the one judge on every captured regime, each in a child `kerncap validate OUT --regime DIR
// --json` (a candidate that faults costs only its own process), then one document over the
// workload: per-regime verdicts and speed-ups, the speed-up weighted by each regime's share
// of the kernel's GPU time, and its projection onto the application's GPU time. Any regime
// that FAILs fails the set and is named; --min-speedup applies to the weighted figure.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/regimes_index.hpp"

namespace kerncap::cli {

inline constexpr const char* kRegimeVerdictFormat = "kerncap-regime-verdict";
inline constexpr int kRegimeVerdictVersion = 1;
// `kerncap validate OUT` where OUT holds several kernels' regime sets (regime-kernels.json):
// {"format", "version", "kernels": [<kerncap-regime-verdict> + "dir"], "failed", "result", "line"}.
inline constexpr const char* kRegimeKernelsVerdictFormat = "kerncap-regime-kernels-verdict";
inline constexpr int kRegimeKernelsVerdictVersion = 1;

// One regime's outcome as its child reported it.
struct RegimeOutcome {
  format::RegimeEntry regime;
  nlohmann::json verdict;          // the child's verdict document (null: it gave none)
  std::string error;               // the child failed without a verdict
  std::optional<double> speedup;   // captured median / candidate median
};

// Pure: regime `e`'s GPU time in the application with the candidate, from its in-app time
// and launches (the profiled run) and the replay's medians of both images (the child's
// verdict "speedup"). Where the application ran the launch no slower than the replay (mean
// in-app time <= the captured image's replay median), the time scales by the replay's ratio
// (what makes the application faster — clocks, a warmer cache — speeds both images alike).
// Where the application ran it slower than the replay can, the excess is work the replay
// does not see (clocks ramping after host-bound gaps, queueing), which the candidate does
// not remove: the time changes by the replay's difference per launch. Without medians, the
// ratio. Measured on the H200 (tests/gpu/regimes_e2e.sh llama): decode launches 33.4 µs on
// average in the application, 21.7 µs in the warm replay; the ratio model put the set 5.4 %
// from `kerncap run --swap`, this one 2.1 %.
double regime_time_with(const format::RegimeEntry& e, const RegimeOutcome& o);

// Pure: the set's document from the index and the outcomes (tested without a GPU).
// "weighted_speedup" = the regimes' in-app time over their time with the candidate
// (regime_time_with); "weighted_speedup_ratio" the same from the ratios alone.
nlohmann::json regime_verdict(const format::RegimesIndex& idx, const std::vector<RegimeOutcome>& outcomes,
                              std::optional<double> min_speedup, bool variant);

// The regime directory `name` of the set in `out`: listed in its index and captured; else
// Error(Usage). Where `out` holds several kernels' sets, `name` is KK-<kernel>/NN-<regime>.
std::filesystem::path regime_dir(const std::filesystem::path& out, const std::string& name);

// Runs the children (the arguments of this process, with --regime DIR --json and, when a
// variant is judged, --speedup; its own --min-speedup and --json taken out), prints the
// table or the JSON document; returns the exit code (0 PASS, 1 FAIL).
int validate_regimes(const std::filesystem::path& out, bool variant, std::optional<double> min_speedup, bool as_json,
                     bool quiet);

// Pure: the document over several kernels' sets from each set's document (by directory).
nlohmann::json regime_kernels_verdict(const std::vector<std::pair<std::string, nlohmann::json>>& sets);

// OUT with regime-kernels.json: the captured image of every kernel judged on every regime
// (children as above, --regime KK-<kernel>/NN-<regime>); a variant or --min-speedup is
// refused (Error(Usage), naming the kernel sets: a variant belongs to one kernel).
int validate_regime_kernels(const std::filesystem::path& out, bool variant, std::optional<double> min_speedup,
                            bool as_json, bool quiet);

}  // namespace kerncap::cli
