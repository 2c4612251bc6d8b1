#pragma once
// The one judge: what a candidate image must satisfy to PASS, decided here once for every
// entry point — `kerncap validate` (in its own process or handed to `kerncap serve`),
// `kerncap-replay --validate`, `kerncap baseline`, the C ABI (kc_evaluate, kc_compare) and
// through it Python's Session.evaluate/evaluate_all and Triton reproducers. They all build a
// JudgePolicy with resolve_policy and hand it to the evaluation loop (evaluate.hpp), which
// alone restores, launches, compares, checks determinism, fuzzes and times; the verdict
// document (Evaluation::to_json) is the only output format.
//
// A policy has three layers, later ones winning: kerncap's defaults, OUT/kerncap.toml (the
// reproducer's own rules), then the caller's overrides — command-line flags, or the same keys
// in kc_evaluate's options (JudgeOverrides::to_json is how validate hands its flags to a
// server, so a served verdict is the one a fresh process reaches).
//
// What the comparison checks (first_spec):
//   - a forced spec (--dtype/--atol/--rtol, the option "spec") is used as given, and no
//     determinism check follows a failure (the caller chose the tolerance);
//   - otherwise OUT/compare.json or byte-exact, with kerncap.toml's [tolerances];
//   - for a VARIANT (another image than the captured one) every region the kernel's
//     signature (else its SASS) types is compared within its dtype's tolerance, not byte for byte: another
//     reduction order, FMA contraction or tensor cores change low bits, and that is the edit
//     a kernel engineer makes. `exact` (--exact) asks for bytes. The captured image's own
//     replay stays byte-exact: that is the evidence that the replay reproduces the launch;
//   - --tolerance REGION:... last, the user's per region.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/invariants.hpp"
#include "format/capture_dir.hpp"
#include "format/kerncap_toml.hpp"
#include "replay/compare_spec.hpp"

namespace kerncap::replay {

// The verdict document every entry point prints (Evaluation::to_json): its name and version.
// Bump the version when a field changes meaning; adding a field does not need it.
inline constexpr const char* kVerdictFormat = "kerncap-verdict";
inline constexpr int kVerdictVersion = 1;

// What a caller may say about the judging. JSON keys (kc_evaluate's options, the serve
// protocol) in brackets; all optional.
struct JudgeOverrides {
  std::optional<std::string> dtype;        // ["dtype"] every byte compared as this type
  std::optional<double> atol, rtol;        // ["atol"], ["rtol"]
  std::optional<nlohmann::json> spec;      // ["spec"] a whole comparison spec (kc_compare's schema)
  bool exact = false;                      // ["exact"] a variant compared byte for byte
  bool no_determinism = false;             // ["check_determinism": false]
  std::optional<std::string> invariants;   // ["invariants"] "no_nan,must_write" (replaces kerncap.toml's)
  bool no_invariants = false;              // ["no_invariants"]
  std::vector<std::string> tolerances;     // ["tolerance"] ["3:atol=1e-3,rtol=1e-2", ...]
  std::optional<double> min_speedup;       // ["min_speedup"]
  bool speedup = false;                    // ["speedup"] time a variant against the captured image
                                           // even without a min_speedup (the regime set's weights)
  uint64_t fuzz = 0, seed = 1;             // ["fuzz"], ["seed"]
  // Only the keys that differ from the defaults.
  nlohmann::json to_json() const;
  // Reads the keys above from an options object (other keys are ignored: they belong to
  // the caller). Wrong types: Error(Input); bad values: Error(Usage).
  static JudgeOverrides from_json(const nlohmann::json& j);
};

struct JudgePolicy {
  std::optional<CompareSpec> forced;  // the caller's spec: used as given, no determinism check
  bool exact = false;
  bool check_determinism = true;
  ToleranceTable tolerances;
  std::string tolerances_from;  // the kerncap.toml path, or "" (the default table)
  std::vector<RegionTolerance> region_tolerances;
  compare::Invariants invariants;
  std::string invariants_from;  // kerncap.toml's path, "--invariant", "--no-invariants" or ""
  double min_speedup = 0;       // 0: none asked for
  std::string min_speedup_from;
  bool measure_speedup = false;  // a variant is timed against the captured image (min_speedup or "speedup")
  uint64_t fuzz = 0, seed = 1;
  // The "policy" object of the verdict document: what was asked and where it came from.
  nlohmann::json to_json() const;
};

// The policy from `o` over `config` (the parsed kerncap.toml, none when absent; `source`
// names it in the verdict). Pure. Error(Usage) for contradicting or malformed overrides,
// Error(Input) for a spec that does not fit the capture.
JudgePolicy resolve_policy(const JudgeOverrides& o, const std::optional<format::KerncapConfig>& config,
                           const std::string& source, const format::Manifest& m);
// The same with the capture's own OUT/kerncap.toml (read now; a malformed file: Error(Input)).
JudgePolicy load_policy(const JudgeOverrides& o, const format::Capture& cap);
// OUT/kerncap.toml of a capture (OUT/capture's parent), whether or not it exists.
std::filesystem::path kerncap_toml_path(const format::Capture& cap);

// The spec the first comparison uses (see the top of this file). `signature`: the captured
// regions' element types as typed spans — the kernel's pointer parameters (signature_spans),
// then, for written regions those leave untyped, its SASS (sass_regions.hpp: extern "C"
// kernels, JIT and closed-library code); `variant`: the image is not the captured one.
CompareSpec first_spec(const JudgePolicy& p, const format::Capture& cap, const std::vector<TypedSpan>& signature,
                       bool variant);

// After the captured kernel was found nondeterministic in regions `ids`, spreading by
// `spread` (replay_spread): `first` plus the element types (`signature`, as for first_spec) in
// those regions, widened by the spread, the user's region tolerances applied last. Its source
// names where the types came from ("... + signature and sass types (nondeterministic kernel)").
CompareSpec nondeterministic_spec(const JudgePolicy& p, const CompareSpec& first, const std::vector<TypedSpan>& signature,
                                  const std::vector<uint32_t>& ids, const std::map<uint32_t, double>& spread,
                                  const format::Manifest& m);

// The regions a nondeterministic kernel is compared within tolerance in: those two replays of
// the captured image disagreed on (`differing`) and, when its code adds floats atomically
// (`float_atomics`, from its SASS), every region it writes (`written`) that `types` types as
// floats — each of them depends on the order of its threads, whether or not two replays
// happened to agree there. Sorted, in manifest order.
std::vector<uint32_t> nondeterministic_ids(const std::vector<uint32_t>& differing, bool float_atomics,
                                           const std::vector<TypedSpan>& types, const std::vector<uint32_t>& written,
                                           const format::Manifest& m);
// The verdict's reason for them: "float atomics in its code (REDG.E.ADD.F64...); two replays of
// the captured image differ in N region(s)" (either part alone when the other is not there).
std::string nondeterministic_cause(const std::string& float_atomics, size_t differing);

// The signature's spans with the policy's per-dtype tolerances.
std::vector<TypedSpan> with_table(std::vector<TypedSpan> signature, const ToleranceTable& table);

}  // namespace kerncap::replay
