#include "replay/evaluate.hpp"

#include <chrono>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "replay/determinism.hpp"
#include "replay/signature.hpp"
#include "replay/state_reset.hpp"

namespace kerncap::replay {

EvaluateOptions evaluate_options_from_json(const nlohmann::json& o, const format::Manifest& m) {
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
  e.timing = timing_options_from_json(t);
  if (e.time) check(e.timing);
  const int64_t fuzz = get("fuzz", int64_t{0});
  if (fuzz < 0 || fuzz > 100000) usage_error(fmt::format("evaluate option \"fuzz\": {} trials (0 to 100000)", fuzz));
  e.fuzz = static_cast<uint64_t>(fuzz);
  e.seed = get("seed", uint64_t{1});
  e.keep_loaded = get("keep_loaded", true);
  if (o.contains("spec") && !o["spec"].is_null()) e.spec = parse_spec(o["spec"], m, "the evaluate option \"spec\"");
  return e;
}

nlohmann::json Evaluation::to_json() const {
  nlohmann::json j = verdict.to_json();
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
  j["result"] = pass() ? "PASS" : "FAIL";
  j["line"] = line;
  j["timing"] = timing ? timing->to_json() : nlohmann::json(nullptr);
  j["image_hash"] = hex_addr(image_hash);
  j["captured_image"] = captured_image;
  j["loaded"] = loaded;
  j["memory"] = memory;
  j["seconds"] = seconds;
  return j;
}

Evaluator::Evaluator(Session& s, const PoisonPlan* poison) : s_(s), poison_(poison) {
  const auto& cap = s.capture();
  if (format::footprint_exists(cap.dir)) footprint_ = format::read_footprint(cap.dir, &cap.manifest);
  default_spec_ = default_spec(cap.dir, cap.manifest);
}

Evaluator::~Evaluator() = default;

uint64_t Evaluator::reset_bytes() const { return reset_ ? reset_->bytes() : 0; }

void Evaluator::full_restore() {
  reset_.reset();  // its staging goes before the new one is taken
  last_restore_ = s_.restore();
  rewritten_words_ = last_restore_.rewritten_words;
  reset_ = std::make_unique<StateReset>(s_);
}

void Evaluator::measure_determinism() {
  const Session::Which was = s_.active();
  s_.use(Session::Which::Captured);
  nondeterministic_ = nondeterministic_regions(s_);
  if (!nondeterministic_.empty()) {
    const auto& m = s_.capture().manifest;
    const auto typed = signature_spans(m, s_.capture().read(m.params_file, "parameter bytes"));
    tolerant_ = tolerant_spec(default_spec_, typed, nondeterministic_, m);
    tolerant_ = widen_by_spread(tolerant_, replay_spread(s_, tolerant_, nondeterministic_), m);
  }
  s_.use(was);
  determinism_known_ = true;
}

Verdict Evaluator::launch_and_compare(const CompareSpec& spec) {
  s_.enqueue();
  s_.synchronize();
  Verdict v = compare_with_after(s_, spec);
  if (poison_) mark_strong(v, *poison_);
  note_closure(v, s_.capture().manifest);
  return v;
}

Evaluation Evaluator::evaluate(const VariantImage* image, const EvaluateOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const format::Manifest& m = s_.capture().manifest;
  if (o.fuzz && !footprint_)
    usage_error(fmt::format("fuzzing needs the launch's footprint (which inputs are read-only, which outputs are "
                            "written): run `kerncap footprint {}` first",
                            s_.capture().dir.string()));
  Evaluation e;
  e.kernel = m.demangled_name;
  e.device = s_.device().ordinal;
  e.relocated_regions = s_.address_space().stats().runs_relocated;
  e.memory = "written";
  // Until this evaluation completes, the next one starts from a full restore.
  bool full = need_full_;
  need_full_ = true;

  // 1. The image.
  e.captured_image = !image || image->hash == m.image_hash;
  e.image_hash = image ? image->hash : m.image_hash;
  e.image = image ? image->desc : "the captured image";
  if (e.captured_image) {
    full |= s_.use(Session::Which::Captured);
  } else {
    if (!s_.has_variant() || s_.variant_hash() != image->hash) {
      full |= s_.load_variant(*image);
      e.loaded = true;
    }
    full |= s_.use(Session::Which::Variant);
  }

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

  // 3. Launch and compare; a nondeterministic captured kernel with its tolerant spec.
  const bool tolerant = !o.spec && !nondeterministic_.empty();
  e.verdict = launch_and_compare(o.spec ? *o.spec : tolerant ? tolerant_ : default_spec_);
  if (!o.spec && !determinism_known_ && e.verdict.failing() > 0) {
    log::info("the replay differs from the application's result; checking whether the captured kernel is "
              "deterministic");
    measure_determinism();
    if (!nondeterministic_.empty()) {
      full_restore();
      e.memory = "full";
      e.restore = last_restore_;
      e.verdict = launch_and_compare(tolerant_);
    }
  }
  if (!o.spec && !nondeterministic_.empty()) e.verdict.nondeterministic = nondeterministic_;
  e.determinism_checked = determinism_known_;
  // A variant that failed may have written bytes the reset does not put back.
  full = !e.verdict.pass();

  // 4. Time, fuzz.
  if (o.time) {
    // A failed variant is timed on clean memory, and may write elsewhere again: `full` stays.
    if (full) full_restore();
    e.timing = time_launches(s_, o.timing, {}, reset_.get());
  }
  if (o.fuzz) {
    e.fuzz = fuzz_in_session(s_, *footprint_, o.fuzz, o.seed);
    full = true;  // the inputs hold the last trial's values
  }
  e.line = fail_line(e.verdict.line(), e.fuzz && !e.fuzz->pass() ? "fuzz trials failed" : "");

  // 5. The module.
  if (!o.keep_loaded && s_.has_variant()) full |= s_.unload_variant();
  generation_ = s_.generation();
  need_full_ = full;
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

}  // namespace kerncap::replay
