#include "replay/eval_session.hpp"

#include <chrono>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "format/capture_dir.hpp"
#include "replay/peer.hpp"

namespace kerncap::replay {

Evaluator& EvaluationSession::evaluation_loop() {
  if (!evaluator) evaluator = std::make_unique<Evaluator>(*session, poison ? &*poison : nullptr);
  return *evaluator;
}

void open_evaluation_session(EvaluationSession& out, const Options& options, const format::Footprint* footprint) {
  // Copies first: `footprint` may be out.footprint itself (a recovery opens it again).
  std::optional<format::Footprint> fp;
  if (footprint) fp = *footprint;
  const Options opt = options;
  out.evaluator.reset();
  out.session.reset();
  out.poison.reset();
  out.options = opt;
  out.footprint = std::move(fp);
  out.session = std::make_unique<Session>(out.options);
  if (out.footprint) {
    out.poison = plan_poison(*out.footprint, out.session->capture().manifest);
    poison_restores(*out.session, *out.poison);
  }
}

std::optional<format::Footprint> stored_footprint(const Options& options, bool strong) {
  if (!strong) return std::nullopt;
  const format::Capture cap = options.opened ? *options.opened : format::open_capture(options.capture);
  if (!format::footprint_exists(cap.dir)) return std::nullopt;
  return format::read_footprint(cap.dir, &cap.manifest);
}

std::string device_line(const Session& s) {
  std::string line = s.device().line(s.capture().manifest);
  if (const std::string note = peer_note(s.capture().manifest, s.device().ordinal); !note.empty())
    line += "\n  note: " + note;
  return line;
}

JudgedOnce judge_once(const Options& options, const format::Footprint* footprint, const EvaluateOptions& o) {
  // The variant is read (and refused when unreadable) before any GPU work.
  std::optional<VariantImage> image;
  if (options.cubin) image = read_variant_image(*options.cubin);
  Options captured = options;
  captured.cubin.reset();
  EvaluationSession es;
  es.reopen_after_fault = false;
  open_evaluation_session(es, captured, footprint);
  JudgedOnce out;
  out.device_line = device_line(*es.session);
  out.evaluation = es.evaluate(image ? &*image : nullptr, o);
  out.placement = es.session->address_space().stats();
  return out;
}

std::string reset_device(int ordinal) {
  const Driver& d = driver();
  if (!d.cuDevicePrimaryCtxReset) return "this driver has no cuDevicePrimaryCtxReset";
  CUdevice dev = 0;
  if (CUresult r = KC_CU_TRY(cuDeviceGet(&dev, ordinal)); r != CUDA_SUCCESS)
    return cu_error_text(r, "cuDeviceGet", __FILE__, __LINE__);
  if (CUresult r = KC_CU_TRY(cuDevicePrimaryCtxReset(dev)); r != CUDA_SUCCESS)
    return cu_error_text(r, "cuDevicePrimaryCtxReset", __FILE__, __LINE__);
  return "";
}

namespace {

// Whether the context still works after an error: a sticky error (illegal address, trap,
// misaligned access, ...) answers every later call with itself.
bool context_broken(const Session& s) {
  s.make_current();
  return KC_CU_TRY(cuCtxSynchronize()) != CUDA_SUCCESS;
}

}  // namespace

Evaluation EvaluationSession::evaluate(const VariantImage* image, const EvaluateOptions& o, const LaunchFn& caller) {
  if (!session) usage_error("no open session (a recovery after a fault failed, or it was closed)");
  const auto t0 = std::chrono::steady_clock::now();
  const bool variant = caller || (image && image->hash != session->capture().manifest.image_hash);
  const std::string desc = image ? image->desc : "the caller's launch";
  try {
    return evaluation_loop().evaluate(image, o, caller);
  } catch (const Error& err) {
    if (err.kind() != ErrorKind::Device || !variant) throw;
    const auto caught = std::chrono::steady_clock::now();
    Evaluation e;
    e.phases.emplace_back("until_fault", std::chrono::duration<double>(caught - t0).count());
    e.policy = o.policy;
    e.policy_iterations = o.timing.iterations;
    e.kernel = session->capture().manifest.demangled_name;
    e.image = desc;
    e.image_hash = image ? image->hash : 0;
    e.device = session->device().ordinal;
    e.memory = "full";
    e.session_strong = strong();
    e.verdict.fault = err.what();
    e.verdict.spec_source = "none (the candidate faulted before any comparison)";
    if (!reopen_after_fault) {
      evaluator.reset();  // nothing more is judged in this session
    } else if (!recover_in_process && context_broken(*session)) {
      log::warn("the candidate {} faulted; this process's CUDA context is unusable and is not recovered here", desc);
      // Left as they are, not destroyed: every release call on a broken context fails (slowly),
      // and the caller replaces the process, whose end frees everything.
      (void)evaluator.release();
      (void)session.release();
      poison.reset();
      e.context_lost = true;
    } else if (context_broken(*session)) {
      // Nothing of the old context can be used or even freed cleanly: drop the session (its
      // release calls fail quietly), reset the device's primary context and open it again. The
      // verdict does not depend on what happens next (every entry point prints the same one).
      log::warn("the candidate {} faulted; resetting the device and opening the capture again", desc);
      const int ordinal = session->device().ordinal;
      evaluator.reset();
      session.reset();
      poison.reset();
      Options again = options;
      again.progress = false;
      // The verdict stands whatever happens next; a session that cannot be opened again says so
      // in it, and later calls are refused ("no open session").
      // The reset frees the context's memory (for a process that takes over); whether the
      // context itself can be used again depends on the driver: try once.
      const std::string why = reset_device(ordinal);
      if (why.empty()) {
        try {
          open_evaluation_session(*this, again, footprint ? &*footprint : nullptr);
        } catch (const Error& reopen) {
          log::warn("the capture could not be opened again in this process: {}", reopen.what());
        }
      } else {
        log::warn("the device could not be reset: {}", why);
      }
      ++recoveries;
      e.recovered = session != nullptr;
      e.context_lost = session == nullptr;
    } else {
      // The context survived (a launch the driver refused): the next evaluation restores all.
      evaluator.reset();
    }
    e.line = e.verdict.line();
    e.determinism_checked = false;
    const auto end = std::chrono::steady_clock::now();
    e.phases.emplace_back("after_fault", std::chrono::duration<double>(end - caught).count());
    e.seconds = std::chrono::duration<double>(end - t0).count();
    return e;
  }
}

}  // namespace kerncap::replay
