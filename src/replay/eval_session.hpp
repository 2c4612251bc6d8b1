#pragma once
// An open session ready for the evaluation loop: the session, the poison plan its restores
// use for strong verdicts, and the Evaluator made on first use. `kerncap validate`,
// `kerncap serve`, `kerncap-replay --validate`, `kerncap baseline` and kc_open (the C ABI,
// for Python) all open one here and judge through evaluate(), so an image gets the same
// verdict from any of them.
#include <memory>
#include <optional>
#include <string>

#include "format/footprint.hpp"
#include "replay/evaluate.hpp"
#include "replay/poison.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

struct EvaluationSession {
  std::unique_ptr<Session> session;
  // Strong validation: the footprint says which bytes the launch writes without reading;
  // every restore poisons them (the session's restore filter keeps a reference to `poison`).
  std::optional<PoisonPlan> poison;
  // Declared after the members it refers to, so it is destroyed first.
  std::unique_ptr<Evaluator> evaluator;
  // How it was opened (a recovery opens it again the same way).
  Options options;
  std::optional<format::Footprint> footprint;
  uint64_t recoveries = 0;  // sessions opened again after a candidate faulted
  bool reopen_after_fault = true;  // false: a one-shot judge, nothing follows the verdict
  // false: a fault that breaks the context is not recovered in this process (no device reset,
  // no second open): the session is dropped at once and the evaluation says context_lost, for
  // a caller that replaces the process anyway (the evaluation pool, whose spare takes over).
  bool recover_in_process = true;

  bool strong() const { return poison.has_value(); }
  // The evaluation loop over this session (made on the first call).
  Evaluator& evaluation_loop();
  // One image judged (evaluation_loop().evaluate). A variant that faults — an illegal
  // address, a trap, a misaligned access: errors that leave the CUDA context unusable —
  // is a FAIL naming the fault; the context is reset and the session opened again where the
  // driver allows (Evaluation::recovered), else `session` is left empty and the evaluation
  // says context_lost: the caller continues in a fresh process (`kerncap serve` starts itself
  // again; Python's Session moves to a `kerncap serve` child). A fault of the captured image
  // is the capture's problem and stays an Error(Device).
  // `caller`: a launch the caller makes (Evaluator::evaluate), judged and recovered as a variant.
  Evaluation evaluate(const VariantImage* image, const EvaluateOptions& o, const LaunchFn& caller = {});
};

// Opens `options`' capture; with `footprint` (it must be the capture's own) every restore
// poisons the bytes the launch writes without reading. Throws kerncap::Error.
void open_evaluation_session(EvaluationSession& out, const Options& options, const format::Footprint* footprint);

// The capture's stored footprint when there is one and `strong` asks for it (kc_open's
// "strong"), else none. Throws Error(Input) for a footprint of another capture.
std::optional<format::Footprint> stored_footprint(const Options& options, bool strong);

// For a session: where it runs and why, and a peer-access note.
std::string device_line(const Session& s);

// One image judged in a session opened for it alone (`kerncap validate` in its own process,
// `kerncap-replay --validate`, `kerncap baseline`): `options` open the capture as captured
// (a cubin in them is judged as the variant), `footprint` makes it strong.
struct JudgedOnce {
  Evaluation evaluation;
  std::string device_line;
  PlacementStats placement;
};
JudgedOnce judge_once(const Options& options, const format::Footprint* footprint, const EvaluateOptions& o);

// Resets the primary context of `ordinal` after a sticky error (every allocation, module and
// stream of it is gone). Returns "" when done, else why not.
std::string reset_device(int ordinal);

}  // namespace kerncap::replay
