#include "replay/validate_flow.hpp"

#include <memory>
#include <optional>

#include "common/log.hpp"
#include "replay/determinism.hpp"
#include "replay/poison.hpp"
#include "replay/signature.hpp"

namespace kerncap::replay {

namespace {

Verdict run_once(Session& s, const CompareSpec& spec, const PoisonPlan* poison, ValidateReport& report) {
  if (poison) poison_restores(s, *poison);
  report.restore = s.restore();
  s.launch();
  Verdict v = compare_with_after(s, spec);
  if (poison) mark_strong(v, *poison);
  return v;
}

}  // namespace

ValidateReport validate(const ValidateRequest& request) {
  ValidateReport report;
  // A bad comparison spec is bad input: refuse it before any GPU work (and without a GPU).
  {
    const format::Capture cap = format::open_capture(request.session.capture);
    report.spec = request.spec ? *request.spec : default_spec(cap.dir, cap.manifest);
  }
  auto s = std::make_unique<Session>(request.session);
  std::optional<PoisonPlan> plan;
  if (request.footprint) plan = plan_poison(*request.footprint, s->capture().manifest);
  const PoisonPlan* poison = plan ? &*plan : nullptr;
  report.kernel = s->capture().manifest.demangled_name;
  report.image = s->image_description();
  report.placement = s->address_space().stats();
  report.verdict = run_once(*s, report.spec, poison, report);
  if (report.verdict.pass() || request.spec || !request.check_determinism) return report;

  // Did the captured image itself disagree with itself? (A variant is judged against the
  // captured kernel's own spread, so its session is closed while the captured one runs.)
  log::info("the replay differs from the application's result; checking whether the captured kernel is deterministic");
  report.determinism_checked = true;
  const bool variant = request.session.cubin.has_value();
  std::vector<uint32_t> ids;
  if (variant) {
    s.reset();
    Options captured = request.session;
    captured.cubin.reset();
    Session c(captured);
    if (poison) poison_restores(c, *poison);
    ids = nondeterministic_regions(c);
  } else {
    ids = nondeterministic_regions(*s);
  }
  if (ids.empty()) return report;
  if (!s) s = std::make_unique<Session>(request.session);
  const auto& m = s->capture().manifest;
  const auto raw_params = s->capture().read(m.params_file, "parameter bytes");
  report.spec = tolerant_spec(report.spec, signature_spans(m, raw_params), ids, m);
  report.verdict = run_once(*s, report.spec, poison, report);
  report.verdict.nondeterministic = ids;
  report.placement = s->address_space().stats();
  return report;
}

}  // namespace kerncap::replay
