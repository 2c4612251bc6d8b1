#pragma once
// An open session ready for the evaluation loop: the session, the poison plan its restores
// use for strong verdicts, and the Evaluator made on first use. kc_open (the C ABI, for
// Python) and `kerncap serve` both open one here, so a variant gets the same verdict from
// either.
#include <memory>
#include <optional>

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

  bool strong() const { return poison.has_value(); }
  // The evaluation loop over this session (made on the first call).
  Evaluator& evaluation_loop();
};

// Opens `options`' capture; with `footprint` (it must be the capture's own) every restore
// poisons the bytes the launch writes without reading. Throws kerncap::Error.
void open_evaluation_session(EvaluationSession& out, const Options& options, const format::Footprint* footprint);

// The capture's stored footprint when there is one and `strong` asks for it (kc_open's
// "strong"), else none. Throws Error(Input) for a footprint of another capture.
std::optional<format::Footprint> stored_footprint(const Options& options, bool strong);

}  // namespace kerncap::replay
