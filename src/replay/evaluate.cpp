#include "replay/evaluate.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "replay/determinism.hpp"
#include "replay/judge.hpp"
#include "replay/kernel_clock.hpp"
#include "replay/sass_regions.hpp"
#include "replay/signature.hpp"
#include "replay/sm_clock.hpp"
#include "replay/state_reset.hpp"

namespace kerncap::replay {

namespace {

// Evaluation::phases: the seconds since the previous lap, added to the named phase.
class Laps {
 public:
  explicit Laps(std::vector<std::pair<std::string, double>>& out) : out_(out), t_(std::chrono::steady_clock::now()) {}
  void operator()(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - t_).count();
    t_ = now;
    for (auto& [n, v] : out_)
      if (n == name) {
        v += s;
        return;
      }
    out_.emplace_back(name, s);
  }

 private:
  std::vector<std::pair<std::string, double>>& out_;
  std::chrono::steady_clock::time_point t_;
};

}  // namespace

EvaluateOptions evaluate_options_from_json(const nlohmann::json& o, const format::Capture& cap) {
  if (!o.is_object()) input_error("the evaluate options must be a JSON object");
  EvaluateOptions e;
  auto get = [&](const char* key, auto fallback) {
    using T = decltype(fallback);
    if (!o.contains(key) || o[key].is_null()) return fallback;
    try {
      return o[key].get<T>();
    } catch (const nlohmann::json::exception&) {
      input_error(fmt::format("evaluate option \"{}\" has the wrong type", key));
    }
  };
  e.time = get("time", true);
  // The timing keys as kc_time reads them, with the loop's own defaults.
  nlohmann::json t = o;
  if (!t.contains("warmup") || t["warmup"].is_null()) t["warmup"] = e.timing.warmup;
  if (!t.contains("iterations") || t["iterations"].is_null()) t["iterations"] = e.timing.iterations;
  if (!t.contains("batch") || t["batch"].is_null()) t["batch"] = e.timing.batch;
  e.timing = timing_options_from_json(t);
  e.keep_loaded = get("keep_loaded", true);
  e.policy = load_policy(JudgeOverrides::from_json(o), cap);
  if (e.time || e.policy.measure_speedup) check(e.timing);
  return e;
}

nlohmann::json Evaluation::to_json() const {
  nlohmann::json j = verdict.to_json();
  j["format"] = kVerdictFormat;
  j["version"] = kVerdictVersion;
  j["policy"] = policy.to_json();
  j["kernel"] = kernel;
  j["image"] = image;
  j["device"] = device;
  j["relocated_regions"] = relocated_regions;
  j["rewritten_words"] = rewritten_words;
  // `kerncap validate --json`'s shape (cmd_validate.cpp).
  if (memory == "full")
    j["restore_work"] = {{"seconds", restore.seconds},
                         {"copied_bytes", restore.copied},
                         {"memset_bytes", restore.filled},
                         {"overlaid_bytes", restore.overlaid}};
  else
    j["restore_work"] = {{"seconds", 0.0}, {"copied_bytes", reset_bytes}, {"memset_bytes", 0}, {"overlaid_bytes", 0}};
  j["determinism_checked"] = determinism_checked;
  if (fuzz) j["fuzz"] = fuzz->to_json();
  if (speedup) {
    j["speedup"] = speedup->to_json();
    j["speedup"]["line"] = speedup->line(policy_iterations);
  }
  if (!speedup_note.empty()) j["speedup_note"] = speedup_note;
  j["result"] = pass() ? "PASS" : "FAIL";
  j["line"] = line;
  j["timing"] = timing ? timing->to_json() : nlohmann::json(nullptr);
  j["image_hash"] = hex_addr(image_hash);
  j["captured_image"] = captured_image;
  j["loaded"] = loaded;
  j["memory"] = memory;
  j["recovered"] = recovered;
  j["context_lost"] = context_lost;
  j["session_strong"] = session_strong;
  j["seconds"] = seconds;
  nlohmann::json ph = nlohmann::json::object();
  for (const auto& [name, s] : phases) ph[name] = s;
  j["phases"] = std::move(ph);
  return j;
}

Evaluator::Evaluator(Session& s, const PoisonPlan* poison) : s_(s), poison_(poison) {
  const auto& cap = s.capture();
  if (format::footprint_exists(cap.dir)) footprint_ = format::read_footprint(cap.dir, &cap.manifest);
  signature_ = signature_spans(cap.manifest, cap.read(cap.manifest.params_file, "parameter bytes"));
}

Evaluator::~Evaluator() = default;

uint64_t Evaluator::reset_bytes() const { return reset_ ? reset_->bytes() : 0; }

void Evaluator::prepare(bool timing) {
  (void)types();
  (void)s_.uniform_check();
  keep_expected_bytes(s_);
  if (!timing) return;
  KernelClock::keep_enabled(true);  // this process times evaluation after evaluation
  { const KernelClock warm; }       // libcupti loaded, its callbacks registered, records on
  // NVML loaded and initialised (about 20 ms on an H200, once per process) and the GPU's
  // maximum clock read, not in the first timing.
  (void)recent_sm_clock(current_pci_bus_id(), kSmClockMaxAge);
}

void Evaluator::full_restore() {
  reset_.reset();  // its staging goes before the new one is taken
  last_restore_ = s_.restore();
  rewritten_words_ = last_restore_.rewritten_words;
  reset_ = std::make_unique<StateReset>(s_);
}

const std::vector<TypedSpan>& Evaluator::types() {
  if (types_) return *types_;
  const format::Capture& cap = s_.capture();
  types_ = signature_;
  const auto t0 = std::chrono::steady_clock::now();
  const KernelSass sass = read_kernel_sass(cap);
  if (!sass.facts) {
    log::info("no element types from SASS: {}", sass.why);
    return *types_;
  }
  float_atomics_ = describe_float_atomics(*sass.facts);
  const std::vector<TypedSpan> more =
      sass_spans(*sass.facts, cap.manifest, cap.read(cap.manifest.params_file, "parameter bytes"),
                 written_extents(cap.manifest, footprint_ ? &*footprint_ : nullptr), signature_);
  types_->insert(types_->end(), more.begin(), more.end());
  std::sort(types_->begin(), types_->end(), [](const TypedSpan& a, const TypedSpan& b) { return a.base < b.base; });
  log::info("SASS ({}, {:.2f} s): {} region span(s) typed{}", sass.disassembler,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), more.size(),
            float_atomics_.empty() ? "" : fmt::format("; float atomics ({}): nondeterministic by construction",
                                                      float_atomics_));
  return *types_;
}

void Evaluator::measure_determinism(const JudgePolicy& p) {
  const Session::Which was = s_.active();
  s_.use(Session::Which::Captured);
  const std::vector<uint32_t> differing = nondeterministic_regions(s_);
  const auto& m = s_.capture().manifest;
  const std::vector<TypedSpan>& typed_spans = types();
  std::vector<uint32_t> written;
  for (const auto& [id, extent] : written_extents(m, footprint_ ? &*footprint_ : nullptr)) written.push_back(id);
  nondeterministic_ = nondeterministic_ids(differing, !float_atomics_.empty(), typed_spans, written, m);
  cause_ = nondeterministic_cause(float_atomics_, differing.size());
  if (!nondeterministic_.empty()) {
    const CompareSpec typed = tolerant_spec(first_spec(p, s_.capture(), typed_spans, false),
                                            with_table(typed_spans, p.tolerances), nondeterministic_, m);
    spread_ = replay_spread(s_, typed, nondeterministic_);
  }
  s_.use(was);
  determinism_known_ = true;
}

void Evaluator::launch(const LaunchFn& caller) {
  if (!caller) {
    s_.enqueue();
    s_.synchronize();
    return;
  }
  caller(s_.stream());
  s_.synchronize();
  // The caller may have launched on a stream of its own.
  if (const CUresult r = KC_CU_TRY(cuCtxSynchronize()); r != CUDA_SUCCESS)
    device_error(cu_error_text(r, "the caller's launch", __FILE__, __LINE__) + " (the kernel faulted)");
}

Verdict Evaluator::compare(const CompareSpec& spec, const JudgePolicy& p) {
  std::optional<InvariantRequest> inv;
  if (p.invariants.any()) {
    inv.emplace();
    inv->checks = p.invariants;
    if (p.invariants.values()) inv->typing = invariant_typing(spec, with_table(types(), p.tolerances));
    // Strong validation: the poisoned bytes are the replay's own writes, read by the value
    // invariants even where the application's launch rewrote equal bytes.
    if (poison_) inv->known_written = &poison_->runs;
  }
  Verdict v = compare_with_after(s_, spec, inv ? &*inv : nullptr);
  if (poison_) mark_strong(v, *poison_);
  note_closure(v, s_.capture().manifest);
  return v;
}

Timing Evaluator::time_image(const TimingOptions& t, bool full, const LaunchFn& caller) {
  if (full || !reset_ || s_.generation() != generation_) full_restore();
  Timing timing = time_launches(s_, t, caller, reset_.get());
  generation_ = s_.generation();
  return timing;
}

SpeedupCheck Evaluator::measure_speedup_here(const TimingOptions& t, double min_speedup, bool& full,
                                             const LaunchFn& caller) {
  const std::optional<double> in_app = s_.capture().manifest.in_app_median_ns;
  const bool blend = t.cache == CacheMode::Blend && in_app && *in_app > 0;
  // Two rounds, interleaved, so that clock and thermal drift fall on both images alike. With
  // cache "blend" and the application's own time of this launch known, each image is timed
  // warm and cold (the application's L2 state lies between: an input the kernel before it just
  // wrote is hot, weights read once per step are not), and each image's time is taken at the
  // point between its warm and cold times where the captured image meets the application's.
  // Otherwise auto (or blend without that time) is resolved once, by the captured image, and
  // both are timed in that state.
  std::vector<float> captured[2], variant[2];  // [warm, cold]
  TimingOptions fixed = t;
  std::string cache;
  const std::vector<CacheMode> modes =
      blend ? std::vector<CacheMode>{CacheMode::Warm, CacheMode::Cold} : std::vector<CacheMode>{t.cache};
  if (blend) fixed.iterations = std::max(5, t.iterations / 2);
  for (int round = 0; round < 2; ++round) {
    for (const CacheMode mode : modes) {
      for (const Session::Which which : {Session::Which::Captured, Session::Which::Variant}) {
        const bool theirs = caller && which == Session::Which::Variant;
        const bool swap_restore = theirs ? false : s_.use(which);
        if (blend) fixed.cache = mode;
        const Timing timing = time_image(fixed, full || swap_restore, theirs ? caller : LaunchFn{});
        full = false;
        if (fixed.cache == CacheMode::Auto || fixed.cache == CacheMode::Blend) {
          fixed.cache = timing.options.cache;
          cache = timing.cache_why;
        }
        // The state the samples were taken in: blend's own, else the one auto resolved to
        // (the samples of an auto that chose cold are cold ones).
        const int state = (blend ? mode : fixed.cache) == CacheMode::Cold ? 1 : 0;
        auto& into = which == Session::Which::Captured ? captured[state] : variant[state];
        into.insert(into.end(), timing.ms.begin(), timing.ms.end());
      }
    }
  }
  if (!blend) {
    const int state = fixed.cache == CacheMode::Cold ? 1 : 0;
    SpeedupCheck c = judge_speedup(statistics(captured[state]), statistics(variant[state]), min_speedup);
    c.cache = cache.empty() ? std::string(state ? "cold" : "warm") : cache;
    return c;
  }
  const CacheBlend b = blend_cache(*in_app, statistics(captured[0]), statistics(captured[1]), statistics(variant[0]),
                                   statistics(variant[1]), other_work_rule(s_));
  SpeedupCheck c = judge_speedup(b.captured, b.variant, min_speedup);
  c.cache = b.why;
  return c;
}

Evaluation Evaluator::evaluate(const VariantImage* image, const EvaluateOptions& o, const LaunchFn& caller) {
  const auto t0 = std::chrono::steady_clock::now();
  const format::Capture& cap = s_.capture();
  const format::Manifest& m = cap.manifest;
  const JudgePolicy& p = o.policy;
  if (p.fuzz && !footprint_)
    usage_error(fmt::format("fuzzing needs the launch's footprint (which inputs are read-only, which outputs are "
                            "written): run `kerncap footprint {}` first",
                            cap.dir.string()));
  if (caller && image) usage_error("an evaluation judges an image or the caller's launch, not both");
  if (caller && p.fuzz)
    usage_error("fuzzing replays both images on random inputs: it needs a variant image, not the caller's launch");
  Evaluation e;
  Laps lap(e.phases);
  e.policy = p;
  e.policy_iterations = o.timing.iterations;
  e.session_strong = poison_ != nullptr;
  e.kernel = m.demangled_name;
  e.device = s_.device().ordinal;
  e.relocated_regions = s_.address_space().stats().runs_relocated;
  e.memory = "written";
  // Until this evaluation completes, the next one starts from a full restore.
  bool full = need_full_;
  need_full_ = true;

  // 1. The image.
  e.captured_image = !caller && (!image || image->hash == m.image_hash);
  e.image_hash = image ? image->hash : caller ? 0 : m.image_hash;
  e.image = image ? image->desc : caller ? "the caller's launch" : "the captured image";
  if (caller) {
    // The caller's kernel runs beside the session's; the captured image stays active (its
    // module globals are the ones the restore fills).
    full |= s_.use(Session::Which::Captured);
  } else if (e.captured_image) {
    full |= s_.use(Session::Which::Captured);
  } else {
    if (!s_.has_variant() || s_.variant_hash() != image->hash) {
      full |= s_.load_variant(*image);
      e.loaded = true;
    }
    full |= s_.use(Session::Which::Variant);
  }
  lap("image");

  // 2. Memory as restored.
  if (full || !reset_ || s_.generation() != generation_) {
    full_restore();
    e.memory = "full";
  } else {
    reset_->reset(s_.stream());  // queued ahead of the launch on the same stream
  }
  e.rewritten_words = rewritten_words_;
  if (e.memory == "full") e.restore = last_restore_;
  else e.reset_bytes = reset_->bytes();
  lap("restore");

  // 3. Launch and compare with the first spec; on a mismatch, the captured kernel's own
  // spread decides whether the same bytes pass within its tolerance.
  // A variant's typed regions compare within tolerance: the SASS's types too (the captured
  // image's code, read once); the captured image's own replay needs none.
  const CompareSpec first = first_spec(p, cap, e.captured_image ? signature_ : types(), !e.captured_image);
  // From the second evaluation on, a loop: the comparison's expected bytes are kept.
  if (++evaluations_ >= 2) keep_expected_bytes(s_);
  lap("spec");
  launch(caller);
  // This launch's own writes are what the reset puts back: memory is still as reset_ knows it
  // (a candidate that fails sets `full` below). Without this, timing saw the generation its
  // own launch moved and restored every byte from the capture again (milliseconds each time).
  generation_ = s_.generation();
  lap("launch");
  e.verdict = compare(first, p);
  lap("compare");
  if (!p.forced && p.check_determinism && e.verdict.failing() > 0) {
    bool relaunch = false;
    if (!determinism_known_) {
      log::info("the replay differs from the application's result; checking whether the captured kernel is "
                "deterministic");
      measure_determinism(p);
      relaunch = true;  // the measurement replayed the captured image over this launch's result
    }
    if (!nondeterministic_.empty()) {
      const CompareSpec tolerant = nondeterministic_spec(p, first, types(), nondeterministic_, spread_, m);
      if (relaunch) {
        full_restore();
        e.memory = "full";
        e.restore = last_restore_;
        launch(caller);
        generation_ = s_.generation();
      }
      e.verdict = compare(tolerant, p);
      e.verdict.nondeterministic = nondeterministic_;
      e.verdict.nondeterministic_cause = cause_;
    }
  }
  e.determinism_checked = determinism_known_;
  lap("determinism");
  // A variant that failed may have written bytes the reset does not put back.
  full = !e.verdict.pass();

  // 4. Time, fuzz, speed-up.
  if (o.time) {
    // A failed variant is timed on clean memory, and may write elsewhere again: `full` stays.
    e.timing = time_image(o.timing, full, caller);
    lap("time");
  }
  if (p.fuzz) {
    e.fuzz = fuzz_in_session(s_, *footprint_, p.fuzz, p.seed);
    full = true;  // the inputs hold the last trial's values
    lap("fuzz");
  }
  if (p.measure_speedup) {
    if (e.captured_image) {
      e.speedup_note = p.min_speedup > 0 ? fmt::format("min_speedup from {} not checked: no variant to time against "
                                                       "the captured image",
                                                       p.min_speedup_from)
                                         : "no speed-up measured: no variant to time against the captured image";
    } else {
      bool dirty = full;
      e.speedup = measure_speedup_here(o.timing, p.min_speedup, dirty, caller);
      full = full || dirty;
      if (!caller) full |= s_.use(Session::Which::Variant);
      lap("speedup");
    }
  }
  std::string extra;
  if (e.fuzz && !e.fuzz->pass()) extra = "fuzz trials failed";
  if (e.speedup && !e.speedup->measured())
    extra += fmt::format("{}the speed-up could not be measured (captured image {:.4f} ms, variant {:.4f} ms)",
                         extra.empty() ? "" : "; ", e.speedup->captured.median, e.speedup->variant.median);
  else if (e.speedup && !e.speedup->pass())
    extra += fmt::format("{}speed-up x{:.3f} below the x{:.3f} required", extra.empty() ? "" : "; ",
                         e.speedup->speedup, e.speedup->min_speedup);
  e.line = fail_line(e.verdict.line(), extra);

  // 5. The module.
  if (!o.keep_loaded && s_.has_variant()) full |= s_.unload_variant();
  lap("image");
  generation_ = s_.generation();
  need_full_ = full;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

}  // namespace kerncap::replay
