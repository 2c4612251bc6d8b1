// The replay engine's C ABI (include/kerncap/replay.h): thin wrappers over the C++ engine.
// Nothing throws across this boundary — every entry point catches, records the message for
// kc_last_error() and returns the exit code the CLI would use for the same failure.
#include "kerncap/replay.h"

#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "replay/compare_spec.hpp"
#include "replay/eval_session.hpp"
#include "replay/evaluate.hpp"
#include "replay/poison.hpp"
#include "replay/regime_verdict.hpp"
#include "replay/session.hpp"
#include "replay/timing.hpp"
#include "replay/validate.hpp"
#include "format/window.hpp"

// The session, its poison plan and its evaluation loop (replay/eval_session.hpp: the same
// open as `kerncap serve`'s).
struct kc_session : kerncap::replay::EvaluationSession {};

namespace {
using nlohmann::json;
namespace replay = kerncap::replay;

thread_local std::string t_error;

template <typename F>
int guarded(F&& f) {
  try {
    t_error.clear();
    f();
    return KC_OK;
  } catch (const kerncap::Error& e) {
    t_error = e.what();
    return kerncap::exit_code(e.kind());
  } catch (const json::exception& e) {
    t_error = std::string("bad JSON argument: ") + e.what();
    return KC_E_INPUT;
  } catch (const std::exception& e) {
    t_error = std::string("internal error: ") + e.what();
    return KC_E_INTERNAL;
  } catch (...) {
    t_error = "internal error: unknown exception";
    return KC_E_INTERNAL;
  }
}

char* dup(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

json parse_options(const char* text, const char* what) {
  if (!text || !*text) return json::object();
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) kerncap::input_error(fmt::format("{} must be a JSON object", what));
  return j;
}

template <typename T>
T option(const json& j, const char* key, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    kerncap::input_error(fmt::format("option \"{}\" has the wrong type", key));
  }
}

replay::Session& live(kc_session* s) {
  if (!s || !s->session) kerncap::usage_error("no open session (kc_open failed or kc_close was called)");
  s->session->make_current();  // the caller may be on another thread than kc_open's
  return *s->session;
}

void need(const void* p, const char* what) {
  if (!p) kerncap::usage_error(fmt::format("{} must not be NULL", what));
}

// One evaluation of `image` (null: the captured image; `caller`: the caller's launch) in session `s`.
void evaluate(kc_session* s, const replay::VariantImage* image, const char* options_json, char** json_out,
              const replay::LaunchFn& caller = {}) {
  auto& session = live(s);
  json o = parse_options(options_json, "kc_evaluate options");
  const replay::EvaluateOptions opt = replay::evaluate_options_from_json(o, session.capture());
  *json_out = dup(s->evaluate(image, opt, caller).to_json().dump());
}

// A kc_launch_fn as the engine's launch: a non-zero return stops with Error(Input).
replay::LaunchFn caller_launch(kc_launch_fn launch, void* user) {
  if (!launch) return {};
  return [launch, user](CUstream st) {
    if (int rc = launch(user, reinterpret_cast<uint64_t>(st)); rc != 0)
      kerncap::input_error(fmt::format("the caller's launch returned {}", rc));
  };
}

}  // namespace

// For the window ABI (window_c.cpp): one kc_last_error() for both.
namespace kerncap::replay::c_api {
void set_last_error(const std::string& message) { t_error = message; }
}  // namespace kerncap::replay::c_api

extern "C" {

int kc_abi_version(void) { return KC_REPLAY_ABI_VERSION; }
int kc_abi_revision(void) { return KC_REPLAY_ABI_REVISION; }
const char* kc_version(void) { return KERNCAP_VERSION; }
const char* kc_last_error(void) { return t_error.c_str(); }
void kc_free(char* s) { std::free(s); }

int kc_capture_info(const char* path, char** json_out) {
  return guarded([&] {
    need(path, "path");
    need(json_out, "json_out");
    auto c = kerncap::format::open_capture(path);
    json j = kerncap::format::to_json(c.manifest);
    j["directory"] = c.dir.string();
    *json_out = dup(j.dump());
  });
}

int kc_open(const char* path, const char* options_json, kc_session** out) {
  return guarded([&] {
    need(path, "path");
    need(out, "out");
    *out = nullptr;
    json o = parse_options(options_json, "kc_open options");
    kerncap::format::refuse_window_capture(path, "the engine's one-launch session (kc_open: Session, evaluate_all)",
                                           "Open it with kerncap.window.Window (kc_window_open).");
    replay::Options opt;
    opt.capture = path;
    if (auto cubin = option<std::string>(o, "cubin", ""); !cubin.empty()) opt.cubin = cubin;
    opt.allow_relocate = option<bool>(o, "allow_relocate", true);
    opt.progress = option<bool>(o, "progress", false);
    opt.verify_hashes = option<bool>(o, "verify", false);
    if (!opt.progress) kerncap::log::set_level(kerncap::log::Level::Quiet);
    const auto footprint = replay::stored_footprint(opt, option<bool>(o, "strong", true));
    auto s = std::make_unique<kc_session>();
    replay::open_evaluation_session(*s, opt, footprint ? &*footprint : nullptr);
    s->recover_in_process = option<bool>(o, "recover", true);
    if (option<bool>(o, "prepare", false)) s->evaluation_loop().prepare();
    *out = s.release();
  });
}

void kc_close(kc_session* s) {
  guarded([&] {
    if (s && s->session) s->session->make_current();
    delete s;
  });
}

int kc_restore(kc_session* s, char** json_out) {
  return guarded([&] {
    auto st = live(s).restore();
    if (json_out) *json_out = dup(json{{"bytes", st.bytes}, {"rewritten_words", st.rewritten_words}}.dump());
  });
}

int kc_translate(kc_session* s, uint64_t captured_address, uint64_t* replay_address) {
  return guarded([&] {
    need(replay_address, "replay_address");
    *replay_address = live(s).translate(captured_address);
  });
}

int kc_params(kc_session* s, uint8_t* buffer, uint64_t capacity, uint64_t* size_out) {
  return guarded([&] {
    const auto& p = live(s).params();
    if (size_out) *size_out = p.size();
    if (buffer && capacity) std::memcpy(buffer, p.data(), std::min<uint64_t>(capacity, p.size()));
  });
}

int kc_stream(kc_session* s, uint64_t* stream_out) {
  return guarded([&] {
    need(stream_out, "stream_out");
    *stream_out = reinterpret_cast<uint64_t>(live(s).stream());
  });
}

int kc_launch(kc_session* s) {
  return guarded([&] {
    auto& session = live(s);
    session.enqueue();
    session.synchronize();
  });
}

int kc_time(kc_session* s, kc_launch_fn launch, void* user, const char* options_json, char** json_out) {
  return guarded([&] {
    auto& session = live(s);
    json o = parse_options(options_json, "kc_time options");
    const replay::TimingOptions t = replay::timing_options_from_json(o);
    replay::Timing timing = replay::time_launches(session, t, caller_launch(launch, user));
    if (json_out) *json_out = dup(timing.to_json().dump());
  });
}

int kc_compare(kc_session* s, const char* spec_json, char** json_out) {
  return guarded([&] {
    auto& session = live(s);
    const auto& cap = session.capture();
    replay::CompareSpec spec;
    if (spec_json && *spec_json) {
      json j = json::parse(spec_json, nullptr, false);
      if (j.is_discarded()) kerncap::input_error("the comparison spec is not valid JSON");
      spec = replay::parse_spec(j, cap.manifest, "the comparison spec");
    } else {
      spec = replay::default_spec(cap.dir, cap.manifest);
    }
    // The caller may have launched on a stream of its own (a Triton kernel on torch's).
    KC_CU(cuCtxSynchronize());
    replay::Verdict v = replay::compare_with_after(session, spec);
    if (s->poison) replay::mark_strong(v, *s->poison);
    if (json_out) *json_out = dup(v.to_json().dump());
  });
}

int kc_evaluate(kc_session* s, const char* image_path, const char* options_json, char** json_out) {
  return guarded([&] {
    need(json_out, "json_out");
    *json_out = nullptr;
    // The arguments first: a missing file is named whatever state the session is in.
    std::optional<replay::VariantImage> image;
    if (image_path) image = replay::read_variant_image(image_path);
    evaluate(s, image ? &*image : nullptr, options_json, json_out);
  });
}

int kc_evaluate_image(kc_session* s, const uint8_t* image, uint64_t size, const char* description,
                      const char* options_json, char** json_out) {
  return guarded([&] {
    need(json_out, "json_out");
    *json_out = nullptr;
    need(image, "image");
    const replay::VariantImage v =
        replay::variant_image(std::vector<uint8_t>(image, image + size), description ? description : "image bytes");
    evaluate(s, &v, options_json, json_out);
  });
}

int kc_evaluate_launch(kc_session* s, kc_launch_fn launch, void* user, const char* options_json, char** json_out) {
  return guarded([&] {
    need(json_out, "json_out");
    *json_out = nullptr;
    need(reinterpret_cast<const void*>(launch), "launch");
    evaluate(s, nullptr, options_json, json_out, caller_launch(launch, user));
  });
}

int kc_regime_verdict(const char* out_dir, const char* outcomes_json, const char* options_json, char** json_out) {
  return guarded([&] {
    need(out_dir, "out_dir");
    need(outcomes_json, "outcomes_json");
    need(json_out, "json_out");
    *json_out = nullptr;
    const json outcomes = json::parse(outcomes_json, nullptr, false);
    if (outcomes.is_discarded()) kerncap::input_error("kc_regime_verdict: the outcomes are not JSON");
    const json o = parse_options(options_json, "kc_regime_verdict options");
    const kerncap::format::RegimesIndex idx = kerncap::format::read_regimes(out_dir);
    *json_out = dup(replay::regime_verdict_from_json(idx, outcomes, o).dump());
  });
}

int kc_regime_set(const char* out_dir, char** json_out) {
  return guarded([&] {
    need(out_dir, "out_dir");
    need(json_out, "json_out");
    *json_out = nullptr;
    *json_out = dup(replay::regime_set_json(out_dir).dump());
  });
}

}  // extern "C"
