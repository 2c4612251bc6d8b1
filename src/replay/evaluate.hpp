#pragma once
// The evaluation loop: one open session judges many variant images (an agent's edits, an
// autotuner's configurations), each the way `kerncap validate --cubin V [--fuzz N]` judges
// one, without a process, a context, a reservation or a restore from the capture files per
// variant:
//   1. the image: the captured one (told by its hash), the variant loaded last (same hash),
//      or a new module, checked as --cubin checks it (Session::load_variant);
//   2. memory as restored: only the bytes a launch changes are put back, from a copy saved
//      right after the last full restore (StateReset: on the GPU, or pinned host memory when
//      GPU memory is short). A full restore from the capture happens first, after a failed
//      comparison (the variant may have written elsewhere), after fuzz trials, when the
//      image's module globals replace another image's, or when another call on the session
//      launched or restored since (its generation changed);
//   3. launch, compare with AFTER (compare_with_after, strong with the session's footprint);
//      on the first comparison that fails with the default spec, the captured kernel's
//      determinism is measured once for the session as `kerncap validate` measures it per
//      run (determinism.hpp); a nondeterministic kernel is compared from then on with the
//      tolerant spec widened by its own spread, and the failed evaluation again with it;
//   4. optionally time (time_launches with the kept StateReset) and fuzz against the captured
//      image (fuzz_in_session);
//   5. the variant's module stays loaded for the next evaluation of the same image, or is
//      unloaded (keep_loaded false). At most two modules are loaded: the captured and one variant.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "format/footprint.hpp"
#include "replay/compare_spec.hpp"
#include "replay/fuzz.hpp"
#include "replay/poison.hpp"
#include "replay/session.hpp"
#include "replay/timing.hpp"
#include "replay/validate.hpp"
#include "replay/variant_image.hpp"

namespace kerncap::replay {

class StateReset;

struct EvaluateOptions {
  bool time = true;
  // Fewer launches than `kerncap replay` (3 + 20): a loop evaluates many images.
  TimingOptions timing{.warmup = 1, .iterations = 10};
  uint64_t fuzz = 0;  // trials against the captured image on random float inputs
  uint64_t seed = 1;
  std::optional<CompareSpec> spec;  // else the session's default (OUT/compare.json or byte-exact)
  bool keep_loaded = true;          // false: unload the variant's module after the evaluation
};

// kc_evaluate's options: {"time", "warmup", "iterations", "restore", "cache", "timer",
// "fuzz", "seed", "spec", "keep_loaded"}; unknown keys are ignored, wrong types and values
// are Error(Input)/Error(Usage). `spec` is parsed against the manifest (parse_spec). Pure.
EvaluateOptions evaluate_options_from_json(const nlohmann::json& o, const format::Manifest& m);

struct Evaluation {
  Verdict verdict;
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
  double seconds = 0;  // wall time of the whole evaluation
  bool pass() const { return verdict.pass() && (!fuzz || fuzz->pass()); }
  // `kerncap validate --json`'s object (result, line, regions, kernel, image, device, ...)
  // plus "timing", "image_hash", "captured_image", "loaded", "memory", "seconds"; its
  // "restore_work" is the restore's (memory "full") or the reset's bytes as copied_bytes.
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

  // `image` null: the captured image.
  Evaluation evaluate(const VariantImage* image, const EvaluateOptions& o);
  // Bytes the kept reset puts back before each launch (0 before the first evaluation).
  uint64_t reset_bytes() const;

 private:
  void full_restore();
  // Two pairs of replays of the captured image (validate_flow.cpp's check): the regions it
  // does not reproduce and the tolerant spec for them. Leaves the session's image as it was.
  void measure_determinism();
  Verdict launch_and_compare(const CompareSpec& spec);

  Session& s_;
  const PoisonPlan* poison_;
  std::optional<format::Footprint> footprint_;
  CompareSpec default_spec_;
  std::unique_ptr<StateReset> reset_;
  uint64_t generation_ = 0;  // the session's generation when memory was last as reset_ knows it
  bool need_full_ = true;
  uint64_t rewritten_words_ = 0;  // by the last full restore
  RestoreStats last_restore_;     // the last full restore
  bool determinism_known_ = false;
  std::vector<uint32_t> nondeterministic_;  // regions the captured kernel does not reproduce
  CompareSpec tolerant_;                   // the spec for them (when there are any)
};

}  // namespace kerncap::replay
