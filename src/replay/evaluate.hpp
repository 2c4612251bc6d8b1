#pragma once
// The evaluation loop, and the one place a verdict is reached: one open session judges one
// image (`kerncap validate`, `kerncap-replay --validate`, `kerncap baseline`) or many (an
// agent's edits through `kerncap serve` or Python's Session), each by the JudgePolicy it is
// given (judge.hpp), without a process, a context, a reservation or a restore from the
// capture files per image:
//   1. the image: the captured one (told by its hash), the variant loaded last (same hash),
//      or a new module, checked as --cubin checks it (Session::load_variant);
//   2. memory as restored: only the bytes a launch changes are put back, from a copy saved
//      right after the last full restore (StateReset: on the GPU, or pinned host memory when
//      GPU memory is short). A full restore from the capture happens first, after a failed
//      comparison (the variant may have written elsewhere), after fuzz trials, when the
//      image's module globals replace another image's, or when another call on the session
//      launched or restored since (its generation changed);
//   3. launch, compare with AFTER with the policy's first spec (a variant's typed regions
//      within tolerance), invariants and strength (the session's poison); when that fails
//      (and the policy lets it), whether the captured kernel is deterministic is measured
//      once per session (two pairs of replays of the captured image); where it is not, the
//      same memory is compared again within the element types (signature, else SASS) widened
//      by the kernel's own spread — so a session that measured it earlier answers as a fresh
//      process does. A kernel whose SASS adds floats atomically is nondeterministic by
//      construction: every float region it writes is compared so, not only those two
//      replays happened to disagree on (judge.hpp nondeterministic_ids);
//   4. optionally time, fuzz against the captured image (fuzz_in_session) and time the
//      captured image against the variant, interleaved, for a minimum speed-up;
//   5. the variant's module stays loaded for the next evaluation of the same image, or is
//      unloaded (keep_loaded false). At most two modules are loaded: the captured and one variant.
// A candidate that faults is judged by EvaluationSession::evaluate (eval_session.hpp), which
// recovers the session.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/footprint.hpp"
#include "replay/compare_spec.hpp"
#include "replay/fuzz.hpp"
#include "replay/judge.hpp"
#include "replay/speedup.hpp"
#include "replay/poison.hpp"
#include "replay/session.hpp"
#include "replay/timing.hpp"
#include "replay/validate.hpp"
#include "replay/variant_image.hpp"

namespace kerncap::replay {

class StateReset;

struct EvaluateOptions {
  bool time = true;
  // Fewer launches than `kerncap replay` (3 + 20): a loop evaluates many images; the timed
  // launches queued together (TimingOptions::batch), one wait for all of them.
  TimingOptions timing{.warmup = 1, .iterations = 10, .batch = 32};
  bool keep_loaded = true;  // false: unload the variant's module after the evaluation
  // What the image must satisfy (judge.hpp): the comparison, invariants, determinism, fuzz
  // trials, a minimum speed-up. Default: kerncap's defaults (evaluate_options_from_json reads
  // OUT/kerncap.toml too).
  JudgePolicy policy;
};

// kc_evaluate's options: {"time", "warmup", "iterations", "batch", "restore", "cache", "timer",
// "keep_loaded"} and the judge's keys (JudgeOverrides: "spec", "dtype", "atol", "rtol",
// "exact", "check_determinism", "invariants", "no_invariants", "tolerance", "min_speedup",
// "fuzz", "seed"), resolved over the capture's OUT/kerncap.toml; unknown keys are ignored,
// wrong types and values are Error(Input)/Error(Usage).
EvaluateOptions evaluate_options_from_json(const nlohmann::json& o, const format::Capture& cap);

struct Evaluation {
  Verdict verdict;
  JudgePolicy policy;  // what it was judged by
  std::string kernel, image, line;
  uint64_t image_hash = 0;
  bool captured_image = false;  // the image is the captured one (same hash)
  bool determinism_checked = false;  // the session knows whether the captured kernel is deterministic
  bool loaded = false;          // its module was loaded for this evaluation
  std::string memory;           // how memory was prepared: "written" (reset) or "full" (restore)
  uint64_t rewritten_words = 0;  // pointer words the last full restore rewrote
  // What put memory back before the launch: memory "full", this evaluation's full restore;
  // "written", the reset's copy of `reset_bytes` (queued with the launch, no time of its own).
  RestoreStats restore;
  uint64_t reset_bytes = 0;
  int device = 0;
  uint32_t relocated_regions = 0;
  std::optional<Timing> timing;
  std::optional<FuzzReport> fuzz;
  std::optional<SpeedupCheck> speedup;
  std::string speedup_note;  // why a min_speedup was not checked (no variant)
  bool recovered = false;    // the candidate faulted and the session was opened again
  // The candidate's fault left this process's CUDA unusable (CUDA's sticky errors: seen on the
  // H200's driver even after a primary-context reset): nothing more can run in this process;
  // `kerncap serve` starts itself again, Python's Session continues in a child process.
  bool context_lost = false;
  bool session_strong = false;  // the session poisons (it has the footprint): its strength
  int policy_iterations = 0; // timing iterations (the speed-up's line names them)
  double seconds = 0;  // wall time of the whole evaluation
  // Where that wall time went, step by step (seconds, in order): "image" (hash check, module
  // load or switch), "restore" (a full restore, or queueing the reset), "launch", "compare",
  // "determinism" (the once-per-session measurement and the tolerant comparison), "time",
  // "fuzz", "speedup". A profile, never part of the verdict.
  std::vector<std::pair<std::string, double>> phases;
  bool pass() const {
    return verdict.pass() && (!fuzz || fuzz->pass()) && (!speedup || speedup->pass());
  }
  // The verdict document: Verdict::to_json (result, line, regions, spec, strength,
  // invariants, nondeterministic_regions, fault) plus "policy", "kernel", "image", "device",
  // "fuzz", "speedup", "timing", "image_hash", "captured_image", "loaded", "memory",
  // "recovered", "context_lost", "session_strong", "seconds"; its "restore_work" is the restore's (memory "full") or the
  // reset's bytes as copied_bytes.
  nlohmann::json to_json() const;
};

class Evaluator {
 public:
  // `poison`: the plan the session's restores poison with (strong verdicts), or null.
  // The footprint, when the capture has one, is read for fuzzing.
  Evaluator(Session& s, const PoisonPlan* poison);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // `image` null: the captured image. `caller`: the image is a launch the caller makes itself
  // on the stream it is given (a Triton kernel launched from Python, kc_evaluate_launch),
  // judged as a variant; `image` must then be null and fuzzing is refused.
  Evaluation evaluate(const VariantImage* image, const EvaluateOptions& o, const LaunchFn& caller = {});
  // Bytes the kept reset puts back before each launch (0 before the first evaluation).
  uint64_t reset_bytes() const;
  // Does now what the first evaluations would otherwise do on their way (a worker opened
  // ahead of need, the evaluation pool's spare): the element types from the SASS (nvdisasm),
  // CUPTI loaded and its kernel records enabled for the rest of the process
  // (KernelClock::keep_enabled), kerncap's comparison check loaded, the expected bytes kept
  // (and copied to the device), NVML loaded and the SM clock read.
  // Changes no verdict: each of these is made once per session either way.
  // `timing` false (a judge that times rarely: `kerncap serve`): neither CUPTI nor NVML, so
  // no kernel records accumulate between timings.
  void prepare(bool timing = true);

 private:
  void full_restore();
  // Two pairs of replays of the captured image: the regions it does not reproduce and how far
  // apart its own results land there. Leaves the session's image as it was.
  void measure_determinism(const JudgePolicy& p);
  void launch(const LaunchFn& caller);
  Verdict compare(const CompareSpec& spec, const JudgePolicy& p);
  // Times the loaded image with the kept reset (a full restore first when `full`).
  Timing time_image(const TimingOptions& t, bool full, const LaunchFn& caller);
  // The variant (or the caller's launch) against the captured image, interleaved (captured,
  // variant, captured, variant).
  SpeedupCheck measure_speedup_here(const TimingOptions& t, double min_speedup, bool& full, const LaunchFn& caller);

  // The element types of the captured regions: the signature's, then the SASS's for written
  // regions the signature leaves untyped (sass_regions.hpp). Read on first use (the SASS is
  // disassembled then), which a launch that matches byte for byte never needs.
  const std::vector<TypedSpan>& types();

  Session& s_;
  const PoisonPlan* poison_;
  std::optional<format::Footprint> footprint_;
  std::vector<TypedSpan> signature_;  // the kernel's pointer parameters, typed
  std::optional<std::vector<TypedSpan>> types_;  // types(), once read
  std::string float_atomics_;  // the float atomics its SASS performs ("" none, or unread)
  std::string cause_;          // why the kernel is nondeterministic (the verdict's line)
  std::unique_ptr<StateReset> reset_;
  uint64_t generation_ = 0;  // the session's generation when memory was last as reset_ knows it
  bool need_full_ = true;
  uint64_t evaluations_ = 0;
  uint64_t rewritten_words_ = 0;  // by the last full restore
  RestoreStats last_restore_;     // the last full restore
  bool determinism_known_ = false;
  std::vector<uint32_t> nondeterministic_;  // regions the captured kernel does not reproduce
  std::map<uint32_t, double> spread_;      // how far apart its own results land there
};

}  // namespace kerncap::replay
