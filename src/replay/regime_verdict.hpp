#pragma once
// The regime set's verdict: one document over a kernel's captured regimes (`extract KERNEL
// --regimes`, OUT/regimes.json) from the one judge's verdict on each regime. It lives in the
// engine, not in a command, because every entry point that judges a set reaches it here:
// `kerncap validate OUT` (cli/validate_regimes.cpp, a child process per regime) and, through
// kc_regime_verdict (include/kerncap/replay.h), the evaluation pool (kerncap evaluate), which
// spreads the regimes over its workers and must not re-implement the weighting.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/regimes_index.hpp"

namespace kerncap::replay {

inline constexpr const char* kRegimeVerdictFormat = "kerncap-regime-verdict";
inline constexpr int kRegimeVerdictVersion = 1;

// How each regime of a set is judged, for every entry point that judges one (validate's
// children, the evaluation pool through kc_regime_set's "judging"): the variant timed against
// the captured image in the regime's own session, at the application's L2 state (blend:
// measured on the HF Llama set, 3.6 % from `kerncap run --swap` where the nearer state was
// 5.2 %) unless the caller chose a state; the caller's min_speedup left out of the regimes and
// applied to the weighted figure.
inline constexpr const char* kRegimeSpeedupCache = "blend";
nlohmann::json regime_judging();

// One regime's outcome as its judge reported it.
struct RegimeOutcome {
  format::RegimeEntry regime;
  nlohmann::json verdict;          // the judge's verdict document (null: it gave none)
  std::string error;               // no verdict: why
  std::optional<double> speedup;   // captured median / candidate median
};

// Regime `e`'s outcome from one judge's document (`kerncap validate --regime DIR --json
// --speedup` or Session.evaluate(..., speedup=True)): a document with a "result" is the
// verdict, its "speedup"."speedup" (a positive number) the speed-up; anything else is no
// verdict, `error` saying why (`no_verdict_why`).
RegimeOutcome regime_outcome(const format::RegimeEntry& e, nlohmann::json doc, const std::string& no_verdict_why);

// Pure: regime `e`'s GPU time in the application with the candidate, from its in-app time
// and launches (the profiled run) and the replay's medians of both images (the verdict's
// "speedup"). Where the application ran the launch no slower than the replay (mean
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

// The C ABI's form (kc_regime_verdict): `outcomes` is a JSON array of {"dir": <a regime of
// idx>, "verdict": <the judge's document> | null, "error": "..."}; every captured regime of
// the index exactly once (a missing one, a duplicate, a regime not captured, or any other
// shape is Error(Input), naming it). `options`: {"min_speedup": x | null, "variant": bool}.
nlohmann::json regime_verdict_from_json(const format::RegimesIndex& idx, const nlohmann::json& outcomes,
                                        const nlohmann::json& options);

// The set in `out` as an evaluator needs it (kc_regime_set): the index's JSON (to_json) with
// "judging" (regime_judging) and "path" added to every captured regime (its directory, checked like validate checks it:
// a plain name inside OUT, no link). Error(Usage) for OUT holding several kernels' sets
// (regime-kernels.json: a variant belongs to one kernel, named with its set's path), Error(Input)
// for a set with no captured regime or a damaged index.
nlohmann::json regime_set_json(const std::filesystem::path& out);

}  // namespace kerncap::replay
