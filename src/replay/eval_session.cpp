#include "replay/eval_session.hpp"

#include "format/capture_dir.hpp"

namespace kerncap::replay {

Evaluator& EvaluationSession::evaluation_loop() {
  if (!evaluator) evaluator = std::make_unique<Evaluator>(*session, poison ? &*poison : nullptr);
  return *evaluator;
}

void open_evaluation_session(EvaluationSession& out, const Options& options, const format::Footprint* footprint) {
  out.evaluator.reset();
  out.session.reset();
  out.poison.reset();
  out.session = std::make_unique<Session>(options);
  if (footprint) {
    out.poison = plan_poison(*footprint, out.session->capture().manifest);
    poison_restores(*out.session, *out.poison);
  }
}

std::optional<format::Footprint> stored_footprint(const Options& options, bool strong) {
  if (!strong) return std::nullopt;
  const format::Capture cap = format::open_capture(options.capture);
  if (!format::footprint_exists(cap.dir)) return std::nullopt;
  return format::read_footprint(cap.dir, &cap.manifest);
}

}  // namespace kerncap::replay
