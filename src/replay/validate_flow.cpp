#include "replay/validate_flow.hpp"
#include "replay/peer.hpp"

#include <memory>
#include <optional>

#include "common/log.hpp"
#include "replay/determinism.hpp"
#include "replay/poison.hpp"
#include "replay/signature.hpp"

namespace kerncap::replay {

namespace {

// The kernel's pointer parameters as typed spans, with the request's per-dtype tolerances.
std::vector<TypedSpan> signature_of(const Session& s, const ToleranceTable& table) {
  const auto& m = s.capture().manifest;
  auto spans = signature_spans(m, s.capture().read(m.params_file, "parameter bytes"));
  for (auto& t : spans) t.tol = table_tolerance(t.dtype, table);
  return spans;
}

Verdict run_once(Session& s, const CompareSpec& spec, const PoisonPlan* poison, const ValidateRequest& request,
                 ValidateReport& report) {
  if (poison) poison_restores(s, *poison);
  report.restore = s.restore();
  s.launch();
  std::optional<InvariantRequest> inv;
  if (request.invariants.any()) {
    inv.emplace();
    inv->checks = request.invariants;
    if (request.invariants.values())
      inv->typing = invariant_typing(spec, signature_of(s, request.tolerances));
  }
  Verdict v = compare_with_after(s, spec, inv ? &*inv : nullptr);
  if (poison) mark_strong(v, *poison);
  return v;
}

ValidateReport validate_once_or_twice(const ValidateRequest& request) {
  ValidateReport report;
  // A bad comparison spec is bad input: refuse it before any GPU work (and without a GPU).
  {
    const format::Capture cap = format::open_capture(request.session.capture);
    report.spec = request.spec ? *request.spec : default_spec(cap.dir, cap.manifest, request.tolerances);
    report.spec = with_region_tolerances(report.spec, request.region_tolerances, cap.manifest, request.tolerances);
  }
  auto s = std::make_unique<Session>(request.session);
  std::optional<PoisonPlan> plan;
  if (request.footprint) plan = plan_poison(*request.footprint, s->capture().manifest);
  const PoisonPlan* poison = plan ? &*plan : nullptr;
  report.kernel = s->capture().manifest.demangled_name;
  report.image = s->image_description();
  report.device = device_line(*s);
  report.device_ordinal = s->device().ordinal;
  report.placement = s->address_space().stats();
  report.verdict = run_once(*s, report.spec, poison, request, report);
  // Only a differing comparison asks whether the kernel is deterministic (an invariant
  // violation alone is the kernel's own).
  if (report.verdict.failing() == 0 || request.spec || !request.check_determinism) return report;

  // Did the captured image itself disagree with itself? (A variant is judged against the
  // captured kernel's own spread, so its session is closed while the captured one runs.)
  log::info("the replay differs from the application's result; checking whether the captured kernel is deterministic");
  report.determinism_checked = true;
  const bool variant = request.session.overrides_launch();
  std::vector<uint32_t> ids;
  std::map<uint32_t, double> spread;
  // The captured kernel's regions that differ between two replays, and by how much.
  auto measure = [&](Session& c) {
    ids = nondeterministic_regions(c);
    if (ids.empty()) return;
    const auto& m = c.capture().manifest;
    spread = replay_spread(c, tolerant_spec(report.spec, signature_of(c, request.tolerances), ids, m), ids);
  };
  if (variant) {
    s.reset();
    Session c(request.session.as_captured());
    if (poison) poison_restores(c, *poison);
    measure(c);
  } else {
    measure(*s);
  }
  if (ids.empty()) return report;
  if (!s) s = std::make_unique<Session>(request.session);
  const auto& m = s->capture().manifest;
  report.spec = tolerant_spec(report.spec, signature_of(*s, request.tolerances), ids, m);
  // Explicit tolerances (per region, from the command line) are the user's: applied last.
  report.spec = widen_by_spread(report.spec, spread, m);
  report.spec = with_region_tolerances(report.spec, request.region_tolerances, m, request.tolerances);
  report.verdict = run_once(*s, report.spec, poison, request, report);
  report.verdict.nondeterministic = ids;
  report.placement = s->address_space().stats();
  return report;
}

}  // namespace

std::string device_line(const Session& s) {
  std::string line = s.device().line(s.capture().manifest);
  if (const std::string note = peer_note(s.capture().manifest, s.device().ordinal); !note.empty())
    line += "\n  note: " + note;
  return line;
}

ValidateReport validate(const ValidateRequest& request) {
  ValidateReport report = validate_once_or_twice(request);
  // What the capture's closure left out, so the verdict can say what it cannot prove.
  note_closure(report.verdict, format::open_capture(request.session.capture).manifest);
  return report;
}

}  // namespace kerncap::replay
