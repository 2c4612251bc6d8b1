// The window engine's C ABI (include/kerncap/window.h): a window capture opened in a replay
// Session, its buffers, and its validation (replay/window_validate.hpp, the same call `kerncap
// window validate` makes) with a run of operations replaced by the caller's launch. Nothing
// throws across this boundary: every entry point records the message for kc_last_error() (the
// replay ABI's, replay_c.cpp) and returns the exit code the CLI would use.
#include "kerncap/window.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/log.hpp"
#include "format/capture_dir.hpp"
#include "format/window.hpp"
#include "replay/session.hpp"
#include "replay/window_replacement.hpp"
#include "replay/window_validate.hpp"

namespace kerncap::replay::c_api {
void set_last_error(const std::string& message);  // replay_c.cpp
}

struct kc_window {
  std::shared_ptr<const kerncap::format::Capture> capture;
  kerncap::format::Window window;
  std::unique_ptr<kerncap::replay::Session> session;
  kerncap::replay::WindowReplay* active = nullptr;  // during kc_window_validate: the replay running `replace`
};

namespace {
using nlohmann::json;
namespace replay = kerncap::replay;

template <typename F>
int window_guarded(F&& f) {
  try {
    replay::c_api::set_last_error("");
    f();
    return KC_OK;
  } catch (const kerncap::Error& e) {
    replay::c_api::set_last_error(e.what());
    return kerncap::exit_code(e.kind());
  } catch (const json::exception& e) {
    replay::c_api::set_last_error(std::string("bad JSON argument: ") + e.what());
    return KC_E_INPUT;
  } catch (const std::exception& e) {
    replay::c_api::set_last_error(std::string("internal error: ") + e.what());
    return KC_E_INTERNAL;
  } catch (...) {
    replay::c_api::set_last_error("internal error: unknown exception");
    return KC_E_INTERNAL;
  }
}

char* window_dup(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

json window_options(const char* text, const char* what) {
  if (!text || !*text) return json::object();
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) kerncap::input_error(fmt::format("{} must be a JSON object", what));
  return j;
}

template <typename T>
T window_option(const json& j, const char* key, T fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    kerncap::input_error(fmt::format("option \"{}\" has the wrong type", key));
  }
}

replay::Session& window_live(kc_window* w) {
  if (!w || !w->session) kerncap::usage_error("no open window (kc_window_open failed or kc_window_close was called)");
  w->session->make_current();
  return *w->session;
}

}  // namespace

namespace kerncap::replay::c_api {

// The request of kc_window_validate's options (the CLI's flags by the same names).
WindowValidateRequest window_request(const json& o, const kc_window& w) {
  WindowValidateRequest r;
  r.dir = w.capture->dir.string();
  r.live_out = window_option<std::string>(o, "live_out", "all");
  r.weak = window_option<bool>(o, "weak", false);
  r.warmup = window_option<int>(o, "warmup", 3);
  r.iterations = window_option<int>(o, "iterations", 20);
  if (r.warmup < 0 || r.iterations < 1) usage_error("warmup must be >= 0 and iterations >= 1");
  r.judge = JudgeOverrides::from_json(o);
  if (o.contains("swaps") && !o["swaps"].is_null()) {
    if (!o["swaps"].is_array()) input_error("option \"swaps\" must be an array of {\"op\", \"image\"}");
    for (const auto& s : o["swaps"]) {
      const size_t op = window_option<size_t>(s, "op", SIZE_MAX);
      const std::string image = window_option<std::string>(s, "image", "");
      if (op == SIZE_MAX || image.empty()) input_error("a swap is {\"op\": INDEX, \"image\": PATH}");
      if (r.swaps.count(op)) usage_error(fmt::format("operation {} is swapped twice", op));
      r.swaps.emplace(op, read_variant_image(image));
    }
  }
  if (const auto file = window_option<std::string>(o, "replace_file", ""); !file.empty())
    r.replacement = read_replacement(file, w.window, w.capture->manifest);
  return r;
}

}  // namespace kerncap::replay::c_api

extern "C" {

int kc_window_open(const char* path, const char* options_json, kc_window** out) {
  return window_guarded([&] {
    if (!path || !out) kerncap::usage_error("kc_window_open: path and out must not be NULL");
    *out = nullptr;
    const json o = window_options(options_json, "kc_window_open options");
    auto w = std::make_unique<kc_window>();
    w->capture = std::make_shared<const kerncap::format::Capture>(kerncap::format::open_capture(path));
    if (!kerncap::format::is_window_capture(w->capture->dir))
      kerncap::input_error(fmt::format("{} is a one-launch capture, not a window (no {}): use kc_open", path,
                                       kerncap::format::kWindowFile));
    w->window = kerncap::format::read_window(w->capture->dir);
    replay::Options so;
    so.capture = w->capture->dir;
    so.opened = w->capture;
    so.progress = window_option<bool>(o, "progress", false);
    so.allow_relocate = window_option<bool>(o, "allow_relocate", true);
    if (!so.progress) kerncap::log::set_level(kerncap::log::Level::Quiet);
    w->session = std::make_unique<replay::Session>(so);
    *out = w.release();
  });
}

void kc_window_close(kc_window* w) {
  window_guarded([&] {
    if (w && w->session) w->session->make_current();
    delete w;
  });
}

int kc_window_info(kc_window* w, char** json_out) {
  return window_guarded([&] {
    if (!json_out) kerncap::usage_error("kc_window_info: json_out must not be NULL");
    auto& s = window_live(w);
    json j = replay::window_buffers_json(s, w->window);
    j["from"] = w->window.from;
    j["to"] = w->window.to;
    j["directory"] = w->capture->dir.string();
    *json_out = window_dup(j.dump());
  });
}

int kc_window_validate(kc_window* w, const char* options_json, kc_launch_fn replace, void* user, char** json_out) {
  return window_guarded([&] {
    if (!json_out) kerncap::usage_error("kc_window_validate: json_out must not be NULL");
    auto& s = window_live(w);
    const json o = window_options(options_json, "kc_window_validate options");
    replay::WindowValidateRequest r = replay::c_api::window_request(o, *w);
    const bool has_range = o.contains("replace") && !o["replace"].is_null();
    if (has_range != (replace != nullptr))
      kerncap::usage_error("kc_window_validate: a replace callback and options[\"replace\"] ({\"from\", \"to\"}) go "
                           "together");
    if (replace) {
      if (r.replacement) kerncap::usage_error("kc_window_validate: a replace callback or replace_file, not both");
      const json& rr = o["replace"];
      replay::Replacement rep;
      rep.from = window_option<size_t>(rr, "from", SIZE_MAX);
      rep.to = window_option<size_t>(rr, "to", SIZE_MAX);
      if (rep.from == SIZE_MAX || rep.to == SIZE_MAX || rep.from > rep.to || rep.to >= w->window.ops.size())
        kerncap::usage_error(fmt::format("replace {{\"from\", \"to\"}}: operations of the window, 0 to {}, from <= to",
                                         w->window.ops.size() - 1));
      rep.call_name = window_option<std::string>(rr, "name", "the caller's launch");
      rep.spec = fmt::format("{}..{}={}", rep.from, rep.to, rep.call_name);
      rep.call = [replace, user, name = rep.call_name](CUstream st) {
        if (const int rc = replace(user, reinterpret_cast<uint64_t>(st)); rc != 0)
          kerncap::input_error(fmt::format("the replacement {} returned {}", name, rc));
      };
      r.replacement = std::move(rep);
    }
    r.on_replay = [w](replay::WindowReplay* p) { w->active = p; };
    const replay::WindowValidation v = replay::validate_window(s, w->window, r);
    json j = replay::window_verdict_json(v);
    if (window_option<bool>(o, "text", false)) j["text"] = replay::window_verdict_text(v);
    *json_out = window_dup(j.dump());
  });
}

int kc_window_enqueue_op(kc_window* w, uint64_t op, uint64_t stream) {
  return window_guarded([&] {
    window_live(w);
    if (!w->active)
      kerncap::usage_error("kc_window_enqueue_op: only from inside the replace callback of kc_window_validate");
    w->active->enqueue_captured(reinterpret_cast<CUstream>(stream), op);
  });
}

}  // extern "C"
