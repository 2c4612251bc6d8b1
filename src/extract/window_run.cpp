#include "extract/window_run.hpp"

#include <cstdio>
#include <regex>

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/diagnose.hpp"
#include "extract/environment.hpp"
#include "extract/launcher.hpp"
#include "format/events.hpp"
#include "format/out_layout.hpp"
#include "storage/capture_writer.hpp"

namespace kerncap::extract {
namespace {

// "PATTERN@N" -> PATTERN, N; a pattern without @digits at its end has N 0.
std::pair<std::string, uint64_t> window_split_at(const std::string& s, const char* which,
                                                 const char* option = "--window") {
  const size_t at = s.rfind('@');
  if (at != std::string::npos && at + 1 < s.size() &&
      s.find_first_not_of("0123456789", at + 1) == std::string::npos) {
    if (at == 0) usage_error(fmt::format("{}: the {} pattern is empty", option, which));
    try {
      return {s.substr(0, at), std::stoull(s.substr(at + 1))};
    } catch (const std::exception&) {
      usage_error(fmt::format("{}: '{}' is not a count", option, s.substr(at + 1)));
    }
  }
  if (s.empty()) usage_error(fmt::format("{}: the {} pattern is empty", option, which));
  return {s, 0};
}

}  // namespace

WindowEndSpec parse_window_spec(const std::string& text, Request* r) {
  const size_t dots = text.find("..");
  if (dots == std::string::npos)
    usage_error(fmt::format("--window '{}': expected FROM[@N]..TO[@M] (e.g. rms_norm@2..silu_mul)", text));
  auto [from, n] = window_split_at(text.substr(0, dots), "first");
  auto [to, m] = window_split_at(text.substr(dots + 2), "last");
  r->kernel = from;
  r->dispatch = n;
  return {to, m};
}

WindowEndSpec parse_graph_spec(const std::string& text, bool regex) {
  WindowEndSpec g;
  g.graph = true;
  if (text.empty()) usage_error("--graph: expected N, PATTERN@N or PATTERN (e.g. 2, or exp_kernel@2)");
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    try {
      g.graph_launch = std::stoull(text);
    } catch (const std::exception&) {
      usage_error(fmt::format("--graph: '{}' is not a launch count", text));
    }
    return g;
  }
  auto [pattern, n] = window_split_at(text, "graph's kernel", "--graph");
  g.graph_kernel = pattern;
  g.graph_launch = n;
  if (regex) {
    try {
      std::regex re(pattern);
    } catch (const std::regex_error& e) {
      usage_error(fmt::format("--graph '{}': not a valid regular expression: {}", pattern, e.what()));
    }
  }
  return g;
}

WindowEndSpec parse_range_spec(const std::string& text, bool regex) {
  WindowEndSpec g;
  g.range = true;
  if (text.empty()) usage_error("--range: expected NAME or NAME@N (e.g. step@2: the third range named step)");
  // An '@' followed by digits at the end counts pushes; a name that itself ends so needs its count
  // (step@2@0 is push 0 of "step@2").
  auto [name, n] = window_split_at(text, "range's name", "--range");
  g.range_name = name;
  g.range_push = n;
  if (name.size() > 4096) usage_error("--range: the name is longer than 4096 characters");
  if (regex) {
    try {
      std::regex re(name);
    } catch (const std::regex_error& e) {
      usage_error(fmt::format("--range '{}': not a valid regular expression: {}", name, e.what()));
    }
  }
  return g;
}

WindowResult run_window(const Request& r, const WindowEndSpec& end) {
  if (!end.graph && !end.range && (r.kernel.empty() || end.kernel.empty()))
    usage_error("a window needs FROM and TO kernel patterns");
  if (r.rank >= 0 || r.device >= 0 || !r.targets.empty())
    usage_error("a window takes no --rank, --device or several targets (not yet: docs/window.md)");
  WindowResult res;
  const std::string what =
      end.graph ? fmt::format("the window of graph launch {} (from 0) of {}", end.graph_launch,
                              end.graph_kernel.empty() ? std::string("any graph")
                                                       : fmt::format("the graphs holding '{}'", end.graph_kernel))
      : end.range ? fmt::format("the window of the NVTX range '{}' (push {} from 0)", end.range_name, end.range_push)
                : fmt::format("the window from '{}' (dispatch {}) to '{}' (its match {} on that launch's stream)",
                              r.kernel, r.dispatch, end.kernel, end.dispatch);
  const CaptureStart st = start_capture(
      r,
      [&](format::Config& config) {
        config.closure_all = true;  // the later launches' pointers are not known at the window's start
        if (end.graph) {
          config.window_graph = true;
          config.window_graph_launch = end.graph_launch;
          config.window_graph_kernel = end.graph_kernel;
        } else if (end.range) {
          config.window_range = end.range_name;
          config.window_range_occurrence = end.range_push;
        } else {
          config.window_end = end.kernel;
          config.window_end_dispatch = end.dispatch;
        }
        config.window_observe = r.window_observe;
      },
      // The Triton shim brackets autotuner benchmarks (kerncap_ignore_begin/end), so they do not
      // count towards FROM@N; its records are not used by a window.
      what, true);
  res.out = st.out;
  res.app = st.app;
  const fs::path cap = format::out::capture_dir(res.out);
  res.capture = format::open_capture(cap);
  if (!format::is_window_capture(res.capture.dir))
    input_error(fmt::format("{} holds a capture but no {}: the library did not record a window (is it an older "
                            "libkerncap.so?)",
                            res.capture.dir.string(), format::kWindowFile));
  res.window = format::read_window(res.capture.dir);
  res.stopped = st.log.stopping;
  try {
    res.reproducer = reproducer::generate_window_reproducer({res.out, r.kerncap}, res.capture, res.window);
  } catch (const Error& e) {
    fail(e.kind(), fmt::format("the window capture in {} is complete, but writing its reproducer next to it failed: "
                               "{} (`kerncap window reproducer {}` writes it again)",
                               res.capture.dir.string(), e.what(), res.out.string()));
  }
  return res;
}

}  // namespace kerncap::extract
