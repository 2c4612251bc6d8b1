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
#include "replay/regime_verdict.hpp"

namespace kerncap::cli {

// The set's own document and its weighting: replay/regime_verdict.hpp (one judge for every entry point).
using replay::kRegimeVerdictFormat;
using replay::kRegimeVerdictVersion;
using replay::RegimeOutcome;

// `kerncap validate OUT` where OUT holds several kernels' regime sets (regime-kernels.json):
// {"format", "version", "kernels": [<kerncap-regime-verdict> + "dir"], "failed", "result", "line"}.
inline constexpr const char* kRegimeKernelsVerdictFormat = "kerncap-regime-kernels-verdict";
inline constexpr int kRegimeKernelsVerdictVersion = 1;

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
