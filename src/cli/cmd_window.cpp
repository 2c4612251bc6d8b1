// `kerncap window`: a window of launches (docs/window.md) — extract it from a running
// application, list its operations, replay and time it, validate it (with kernels swapped for
// variants). Parsing and printing; the work is in src/extract/window_run.cpp (the run),
// src/replay/window_replay.cpp (the operations in a session) and the one judge (evaluate.hpp).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "extract/window_run.hpp"
#include "format/capture_dir.hpp"
#include "format/window.hpp"
#include "format/window_liveout.hpp"
#include "format/out_layout.hpp"
#include "replay/evaluate.hpp"
#include "replay/judge.hpp"
#include "replay/window_pieces.hpp"
#include "replay/window_poison.hpp"
#include "replay/window_replay.hpp"
#include "reproducer/window_reproducer.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;
// Named, not anonymous: the CLI is built as unity files, where other commands' anonymous
// namespaces share this one's scope.
namespace window_cmd {

inline constexpr const char* kWindowVerdictFormat = "kerncap-window-verdict";
inline constexpr int kWindowVerdictVersion = 1;

struct Opened {
  std::shared_ptr<const format::Capture> capture;
  format::Window window;
};

Opened open_window(const std::string& dir) {
  Opened o;
  o.capture = std::make_shared<const format::Capture>(format::open_capture(dir));
  if (!format::is_window_capture(o.capture->dir))
    input_error(fmt::format("{} is a one-launch capture, not a window (no {}): use kerncap replay/validate, or "
                            "extract a window with `kerncap window extract --window FROM..TO`",
                            dir, format::kWindowFile));
  o.window = format::read_window(o.capture->dir);
  return o;
}

// One name for an operation, the reproducer's README and Makefile's too.
std::string op_name(const format::WindowOp& op) { return reproducer::window_op_name(op); }

// The binary the reproducer's Makefile calls: this one.
fs::path window_self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("kerncap") : p;
}

// Where the reproducer goes: OUT of OUT/capture (the Makefile's commands name `.`, which
// resolves to ./capture).
fs::path reproducer_out(const format::Capture& c) {
  fs::path dir = fs::absolute(c.dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "OUT/capture/"
  if (dir.filename().string() != format::out::kCapture)
    usage_error(fmt::format("{}: the reproducer is written beside a capture directory named {}/ (OUT/{}), which its "
                            "Makefile's commands name as `.`; this one is named {}",
                            c.dir.string(), format::out::kCapture, format::out::kCapture, dir.filename().string()));
  return dir.parent_path();
}

void print_reproducer(const fs::path& out, const reproducer::WindowGenerated& g) {
  for (const auto& n : g.notes) std::cout << "  note: " << n << "\n";
  std::cout << fmt::format("  reproducer: {} (make help; README.md lists the operations): make run | time | validate "
                           "[SWAP=INDEX=FILE] [LIVE_OUT=ids]\n",
                           out.string());
}

nlohmann::json reproducer_json(const reproducer::WindowGenerated& g) {
  return {{"makefile", g.makefile.string()}, {"readme", g.readme.string()}, {"notes", g.notes}};
}

std::string shorten(std::string s, size_t n = 60) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

std::string ms(std::optional<uint64_t> ns) { return ns ? fmt::format("{:.4f}", *ns / 1e6) : std::string("-"); }

// The foreign-operations warning (their writes are in AFTER; no replay makes them).
void warn_foreign(const format::Window& w) {
  if (!w.foreign_ops) return;
  std::fprintf(stderr,
               "kerncap: warning: %llu operation(s) ran in the application during the window but are not part of it "
               "(e.g. %s); what they wrote is in AFTER but no replay makes those writes\n",
               static_cast<unsigned long long>(w.foreign_ops),
               w.foreign_examples.empty() ? "?" : w.foreign_examples[0].c_str());
}

nlohmann::json window_summary(const format::Window& w) {
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const auto& op = w.ops[i];
    nlohmann::json j = {{"index", i}, {"kind", to_string(op.kind)}, {"name", op_name(op)}};
    if (op.kind == format::WindowOp::Kind::Kernel) {
      j["mangled"] = op.mangled;
      j["grid"] = op.grid;
      j["block"] = op.block;
    }
    j["in_app_ns"] = op.in_app_ns ? nlohmann::json(*op.in_app_ns) : nlohmann::json(nullptr);
    ops.push_back(std::move(j));
  }
  return {{"from", w.from},
          {"from_dispatch", w.from_dispatch},
          {"to", w.to},
          {"to_dispatch", w.to_dispatch},
          {"graph", w.graph ? nlohmann::json{{"launch", w.graph->launch}, {"nodes", w.graph->nodes}} : nlohmann::json(nullptr)},
          {"ops", ops},
          {"kernels", w.kernels()},
          {"in_app_window_ns", w.in_app_window_ns ? nlohmann::json(*w.in_app_window_ns) : nlohmann::json(nullptr)},
          {"in_app_kernels_ns", w.in_app_kernels_ns ? nlohmann::json(*w.in_app_kernels_ns) : nlohmann::json(nullptr)},
          {"foreign_ops", w.foreign_ops},
          {"foreign_examples", w.foreign_examples}};
}

void print_ops(const format::Window& w, const replay::WindowTiming* t) {
  std::cout << fmt::format("  {:>3}  {:<9} {:<60} {:>11} {:>7}{}\n", "op", "kind", "name", "in-app ms", "share",
                           t ? fmt::format(" {:>11} {:>6}", "replay ms", "ratio") : "");
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const auto& op = w.ops[i];
    const std::string share = op.in_app_ns && w.in_app_kernels_ns && *w.in_app_kernels_ns
                                  ? fmt::format("{:.1f}%", 100.0 * *op.in_app_ns / *w.in_app_kernels_ns)
                                  : "-";
    std::string extra;
    if (t && i < t->op_ms.size()) {
      const double r = t->op_ms[i];
      // 0: an operation of a replaced run after its first (the replacement's time is on that one).
      extra = r == 0 ? fmt::format(" {:>11} {:>6}", "-", "-")
                     : fmt::format(" {:>11.4f} {:>6}", r,
                                   op.in_app_ns && *op.in_app_ns ? fmt::format("{:.2f}", r * 1e6 / *op.in_app_ns) : "-");
    }
    std::cout << fmt::format("  {:>3}  {:<9} {:<60} {:>11} {:>7}{}\n", i, to_string(op.kind), shorten(op_name(op)),
                             ms(op.in_app_ns), share, extra);
  }
}

std::string ratio_text(double replay_ms, std::optional<uint64_t> in_app_ns) {
  if (!in_app_ns || !*in_app_ns) return "no in-app time";
  return fmt::format("ratio {:.2f}", replay_ms * 1e6 / *in_app_ns);
}

// How the replay's times compare with the application's, and which comparison is fair: the
// kernels' GPU time against the in-app kernels' (the one within ±10 % is expected), and the
// replay's span (no host gaps: every operation queued first) against the in-app span and against
// the in-app busy time (the span less the host's gaps between launches, which an eager
// application spends launching and which kerncap's recording lengthens).
struct TimeCompare {
  std::optional<double> kernels_ratio, span_ratio, span_busy_ratio, in_app_gaps_ms, in_app_gap_share;
  bool kernels_within = false;
};
constexpr double kWindowTimeTolerance = 0.10;

TimeCompare compare_times(const replay::WindowTiming& t, const format::Window& w) {
  TimeCompare c;
  if (w.in_app_kernels_ns && *w.in_app_kernels_ns) {
    c.kernels_ratio = t.kernels_ms * 1e6 / *w.in_app_kernels_ns;
    c.kernels_within = std::abs(*c.kernels_ratio - 1) <= kWindowTimeTolerance;
    c.span_busy_ratio = t.window_ms * 1e6 / *w.in_app_kernels_ns;
  }
  if (w.in_app_window_ns && *w.in_app_window_ns) {
    c.span_ratio = t.window_ms * 1e6 / *w.in_app_window_ns;
    if (w.in_app_kernels_ns && *w.in_app_window_ns >= *w.in_app_kernels_ns) {
      c.in_app_gaps_ms = (*w.in_app_window_ns - *w.in_app_kernels_ns) / 1e6;
      c.in_app_gap_share = static_cast<double>(*w.in_app_window_ns - *w.in_app_kernels_ns) / *w.in_app_window_ns;
    }
  }
  return c;
}

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json timing_json(const replay::WindowTiming& t, const format::Window& w) {
  nlohmann::json j = {{"iterations", t.iterations},
                      {"window_ms", t.window_ms},
                      {"kernels_ms", t.kernels_ms},
                      {"kernels_warm_ms", opt_json(t.kernels_warm_ms)},
                      {"kernels_cold_ms", opt_json(t.kernels_cold_ms)},
                      {"kernels_method", t.kernels_method},
                      {"cache", t.cache},
                      {"cache_why", t.cache_why},
                      {"op_ms", t.op_ms},
                      {"op_method", t.op_method}};
  j["in_app_window_ms"] = w.in_app_window_ns ? nlohmann::json(*w.in_app_window_ns / 1e6) : nlohmann::json(nullptr);
  j["in_app_kernels_ms"] = w.in_app_kernels_ns ? nlohmann::json(*w.in_app_kernels_ns / 1e6) : nlohmann::json(nullptr);
  const TimeCompare c = compare_times(t, w);
  j["window_ratio"] = opt_json(c.span_ratio);
  j["kernels_ratio"] = opt_json(c.kernels_ratio);
  j["kernels_within_10pct"] = c.kernels_ratio ? nlohmann::json(c.kernels_within) : nlohmann::json(nullptr);
  j["window_busy_ratio"] = opt_json(c.span_busy_ratio);
  j["in_app_gaps_ms"] = opt_json(c.in_app_gaps_ms);
  j["in_app_gap_share"] = opt_json(c.in_app_gap_share);
  return j;
}

// The lines `window replay` and `window validate` print under the table.
void print_times(const replay::WindowTiming& t, const format::Window& w) {
  const TimeCompare c = compare_times(t, w);
  std::cout << fmt::format("  kernels' GPU time:  replay {:.4f} ms ({}, L2 {}; warm {}, cold {}), in-app {} ms, {}{}\n",
                           t.kernels_ms, t.kernels_method, t.cache,
                           t.kernels_warm_ms ? fmt::format("{:.4f}", *t.kernels_warm_ms) : std::string("-"),
                           t.kernels_cold_ms ? fmt::format("{:.4f}", *t.kernels_cold_ms) : std::string("-"),
                           ms(w.in_app_kernels_ns), ratio_text(t.kernels_ms, w.in_app_kernels_ns),
                           c.kernels_ratio ? (c.kernels_within ? ": within ±10 %" : ": outside ±10 %") : "");
  std::cout << fmt::format("  window span:        replay {:.4f} ms (GPU, every operation queued first: no host gap), "
                           "in-app {} ms, {}\n",
                           t.window_ms, ms(w.in_app_window_ns), ratio_text(t.window_ms, w.in_app_window_ns));
  if (c.in_app_gaps_ms && c.span_busy_ratio)
    std::cout << fmt::format("    the in-app span holds {:.4f} ms ({:.0f} %) of host gaps between launches (launching "
                             "and kerncap's recording); less those, the in-app busy time is {} ms: replay span / busy "
                             "{:.2f} (the replay span holds the GPU's own gaps between operations)\n",
                             *c.in_app_gaps_ms, 100 * *c.in_app_gap_share, ms(w.in_app_kernels_ns),
                             *c.span_busy_ratio);
  if (!t.cache_why.empty()) std::cout << "    L2: " << t.cache_why << "\n";
}

// ---- extract ----
struct ExtractArgs {
  extract::Request request;
  std::string window, graph, output;
  bool json = false;
};

void run_extract(ExtractArgs& a, int& exit_code) {
  extract::Request& r = a.request;
  r.output = a.output;
  r.kerncap = window_self_exe();
  if (a.window.empty() == a.graph.empty()) usage_error("give either --window FROM..TO or --graph [PATTERN@]N");
  const extract::WindowEndSpec end =
      a.graph.empty() ? extract::parse_window_spec(a.window, &r) : extract::parse_graph_spec(a.graph, r.regex);
  const extract::WindowResult res = extract::run_window(r, end);
  const format::Manifest& m = res.capture.manifest;
  warn_foreign(res.window);
  if (a.json) {
    nlohmann::json j = window_summary(res.window);
    j.update({{"output", res.out.string()},
              {"capture", res.capture.dir.string()},
              {"regions", m.regions.size()},
              {"before_bytes", m.before_bytes},
              {"after_bytes", m.after_bytes},
              {"capture_seconds", m.capture_seconds},
              {"reproducer", reproducer_json(res.reproducer)},
              {"application", res.stopped ? "stopped after capture" : res.app.describe()}});
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << fmt::format("captured a window of {} operations ({} kernel launches) from {} (launch #{})\n"
                             "  {} regions, BEFORE {}, AFTER {} ({} runs), {:.2f} s\n  in-app: window {} ms, kernels {} ms\n",
                             res.window.ops.size(), res.window.kernels(), m.demangled_name, m.launch_index,
                             m.regions.size(), human_bytes(m.before_bytes), human_bytes(m.after_bytes), m.after.size(),
                             m.capture_seconds, ms(res.window.in_app_window_ns), ms(res.window.in_app_kernels_ns));
    print_ops(res.window, nullptr);
    std::cout << "  -> " << res.capture.dir.string() << "\n";
    print_reproducer(res.out, res.reproducer);
    if (res.stopped) std::cout << "  the application was stopped after the capture (--continue lets it finish)\n";
    else std::cout << "  the application " << res.app.describe() << "\n";
  }
  exit_code = 0;
}

// ---- info ----
void run_info(const std::string& dir, bool as_json, int& exit_code) {
  const Opened o = open_window(dir);
  if (as_json) {
    std::cout << window_summary(o.window).dump(2) << std::endl;
  } else {
    const format::Manifest& m = o.capture->manifest;
    std::cout << fmt::format("window {}: {} operations ({} kernel launches), {} regions, BEFORE {}, AFTER {}\n"
                             "  in-app: window {} ms, kernels {} ms\n",
                             format::window_title(o.window),
                             o.window.ops.size(), o.window.kernels(), m.regions.size(), human_bytes(m.before_bytes),
                             human_bytes(m.after_bytes), ms(o.window.in_app_window_ns), ms(o.window.in_app_kernels_ns));
    print_ops(o.window, nullptr);
    warn_foreign(o.window);
  }
  exit_code = 0;
}

// ---- reproducer ----
void run_reproducer(const std::string& dir, bool as_json, int& exit_code) {
  const Opened o = open_window(dir);
  const fs::path out = reproducer_out(*o.capture);
  const reproducer::WindowGenerated g =
      reproducer::generate_window_reproducer({out, window_self_exe()}, *o.capture, o.window);
  if (as_json) {
    nlohmann::json j = reproducer_json(g);
    j["output"] = out.string();
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << fmt::format("wrote {} and {} for the window of {} operations ({} kernel launches)\n",
                             g.makefile.string(), g.readme.string(), o.window.ops.size(), o.window.kernels());
    print_reproducer(out, g);
  }
  exit_code = 0;
}

// ---- replay and validate ----
struct RunArgs {
  std::string dir;
  int warmup = 3, iterations = 20;
  bool json = false, quiet = false;
  // validate
  std::vector<std::string> swaps;  // INDEX=FILE
  std::string live_out = "all";
  std::string dtype;
  std::optional<double> atol, rtol;
  bool exact = false;
  bool weak = false;  // no poison probe: a weak verdict
  std::string replace;  // FROM..TO=launches.json
};

std::map<size_t, replay::VariantImage> read_swaps(const std::vector<std::string>& specs) {
  std::map<size_t, replay::VariantImage> out;
  for (const auto& s : specs) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size() ||
        s.find_first_not_of("0123456789") != eq)
      usage_error(fmt::format("--swap '{}': expected INDEX=FILE (an operation index of `kerncap window info`)", s));
    const size_t index = std::stoull(s.substr(0, eq));
    if (out.count(index)) usage_error(fmt::format("--swap: operation {} is swapped twice", index));
    out.emplace(index, replay::read_variant_image(s.substr(eq + 1)));
  }
  return out;
}

// --live-out all | auto | ID,...: the regions judged (nullopt: all). `auto` needs the capture's
// observation of the application after the window (window_liveout.json).
std::optional<std::set<uint32_t>> parse_live_out(const std::string& s, const format::Manifest& m,
                                                 const std::optional<format::WindowLiveOut>& observed,
                                                 const std::string& dir) {
  if (s == "all") return std::nullopt;
  if (s == "auto") {
    if (!observed)
      input_error(fmt::format("--live-out auto: {} has no observation of the application after the window ({}): it "
                              "was extracted with --observe 0, by an older kerncap, or the application was killed "
                              "before the observation ended; use --live-out all or a list of region ids, or extract "
                              "the window again",
                              dir, format::kWindowLiveOutFile));
    std::set<uint32_t> ids;
    for (uint32_t id : observed->live())
      if (m.find_region(id)) ids.insert(id);
    return ids;
  }
  std::set<uint32_t> ids;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    const std::string part = s.substr(at, comma - at);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 9)
      usage_error(fmt::format("--live-out '{}': expected all, auto or region ids separated by commas", s));
    const uint32_t id = static_cast<uint32_t>(std::stoul(part));
    if (!m.find_region(id)) usage_error(fmt::format("--live-out: the capture has no region {}", id));
    ids.insert(id);
    at = comma + 1;
  }
  return ids;
}

// A region the observation saw dead after the window (never read, or overwritten first).
const format::LiveOutRegion* dead_region(const std::optional<format::WindowLiveOut>& observed, uint32_t id) {
  if (!observed) return nullptr;
  const format::LiveOutRegion* r = observed->find(id);
  return r && !r->read ? r : nullptr;
}

// "Result: PASS (...)" with `note` added inside its parentheses.
std::string with_note(const std::string& line, const std::string& note) {
  if (note.empty()) return line;
  if (line.empty() || line.back() != ')') return line + " [" + note + "]";
  return line.substr(0, line.size() - 1) + "; " + note + ")";
}

replay::Options session_options(const Opened& o, bool quiet) {
  replay::Options so;
  so.capture = o.capture->dir;
  so.opened = o.capture;
  so.progress = !quiet;
  return so;
}

void run_replay(const RunArgs& a, int& exit_code) {
  const Opened o = open_window(a.dir);
  replay::Session s(session_options(o, a.quiet || a.json));
  replay::WindowReplay wr(s, o.window, {});
  const replay::WindowTiming t = wr.time(a.warmup, a.iterations);
  if (a.json) {
    nlohmann::json j = window_summary(o.window);
    j["timing"] = timing_json(t, o.window);
    j["notes"] = wr.notes();
    std::cout << j.dump(2) << std::endl;
  } else {
    for (const auto& n : wr.notes()) std::fprintf(stderr, "kerncap: note: %s\n", n.c_str());
    warn_foreign(o.window);
    std::cout << fmt::format("window of {} operations ({} kernels), {} iterations (median)\n", o.window.ops.size(),
                             o.window.kernels(), t.iterations);
    print_ops(o.window, &t);
    print_times(t, o.window);
  }
  exit_code = 0;
}

// A piece of a region the observation saw read as a whole but not in these bytes
// (window_pieces.hpp): a dead intermediate among live tensors of one allocation.
struct DeadPiece {
  uint32_t region = 0;
  size_t index = 0;  // manifest order
  replay::WindowPiece piece;
};

// The dead pieces of the regions read after the window (none without a version 2 observation).
std::vector<DeadPiece> dead_pieces(const format::Capture& cap, const format::Window& w,
                                   const std::optional<format::WindowLiveOut>& observed) {
  std::vector<DeadPiece> out;
  if (!observed) return out;
  const format::Manifest& m = cap.manifest;
  std::vector<std::vector<uint8_t>> params;  // each kernel operation's, read once
  bool params_read = false;
  for (const auto& lr : observed->regions) {
    if (!lr.read || !lr.reads_complete) continue;
    size_t index = m.regions.size();
    for (size_t i = 0; i < m.regions.size(); ++i)
      if (m.regions[i].id == lr.id) index = i;
    if (index == m.regions.size()) continue;
    const format::Region& reg = m.regions[index];
    if (!params_read) {
      for (size_t i = 0; i < w.ops.size(); ++i)
        if (w.ops[i].kind == format::WindowOp::Kind::Kernel)
          params.push_back(cap.read(format::window_params_file(i), "a window kernel's parameters"));
      params_read = true;
    }
    std::vector<uint64_t> cuts;
    for (const auto& p : params) replay::add_pointer_cuts(p, reg.base, reg.size, &cuts);
    std::vector<std::pair<uint64_t, uint64_t>> changed;
    for (const auto& r : m.after)
      if (r.region == lr.id) changed.emplace_back(r.offset, r.size);
    for (auto& piece : replay::window_pieces(reg.size, std::move(changed), std::move(cuts), lr))
      if (!piece.read) out.push_back({lr.id, index, std::move(piece)});
  }
  return out;
}

// The dead piece of region `id` that holds region offset `at`, or null.
const DeadPiece* dead_piece_at(const std::vector<DeadPiece>& pieces, uint32_t id, std::optional<uint64_t> at) {
  if (!at) return nullptr;
  for (const auto& d : pieces)
    if (d.region == id && *at >= d.piece.offset && *at - d.piece.offset < d.piece.size) return &d;
  return nullptr;
}

void run_validate(const RunArgs& a, int& exit_code) {
  const Opened o = open_window(a.dir);
  const format::Capture& cap = *o.capture;
  const std::optional<format::WindowLiveOut> observed = format::read_window_liveout(cap.dir);
  const auto live = parse_live_out(a.live_out, cap.manifest, observed, a.dir);
  const auto swaps = read_swaps(a.swaps);
  std::optional<replay::Replacement> replacement;
  if (!a.replace.empty()) replacement = replay::read_replacement(a.replace, o.window, cap.manifest);
  const bool variant = !swaps.empty() || replacement;
  replay::JudgeOverrides over;
  if (!a.dtype.empty()) over.dtype = a.dtype;
  over.atol = a.atol;
  over.rtol = a.rtol;
  over.exact = a.exact;
  over.no_determinism = true;  // the determinism check replays the first kernel alone: not a window's
  replay::EvaluateOptions eo;
  eo.time = false;
  eo.policy = replay::load_policy(over, cap);
  // The captured window is judged byte for byte (the evidence that the replay reproduces it);
  // with a swap, the judge's variant rules apply (typed regions within tolerance).
  if (!variant) eo.policy.exact = true;
  replay::Session s(session_options(o, a.quiet || a.json));
  // Under auto, the dead pieces of live regions are not judged: the captured window's bytes
  // there are put back after the judged replay.
  const std::vector<DeadPiece> pieces = dead_pieces(cap, o.window, observed);
  std::optional<replay::WindowKeptBytes> kept;
  if (a.live_out == "auto" && !pieces.empty()) {
    std::vector<replay::KeptRange> ranges;
    for (const auto& d : pieces) ranges.push_back({d.index, d.piece.offset, d.piece.size});
    replay::WindowReplay captured(s, o.window, {});
    kept.emplace(s, captured, std::move(ranges));
  }
  // Strong: the window's write-only live-out bytes, probed on the captured window, are poisoned
  // before the judged replay by the one poison code (window_poison.hpp).
  std::optional<replay::WindowPoison> poison;
  if (!a.weak) {
    replay::WindowReplay captured(s, o.window, {});
    poison = replay::probe_window_poison(s, captured, live);
  }
  const replay::PoisonPlan* plan = poison && poison->weak_reason.empty() ? &poison->plan : nullptr;
  if (plan) replay::poison_restores(s, *plan);
  replay::WindowReplay wr(s, o.window, swaps, replacement ? &*replacement : nullptr);
  replay::Evaluator ev(s, plan);
  replay::Evaluation e = ev.evaluate(nullptr, eo, [&](CUstream st) {
    wr.enqueue(st);
    if (kept) kept->put_back(st);
  });
  s.set_restore_filter({});
  std::vector<uint32_t> ignored;
  if (live) {
    auto& regions = e.verdict.regions;
    for (const auto& r : regions)
      if (!live->count(r.id) && r.result.mismatches) ignored.push_back(r.id);
    regions.erase(std::remove_if(regions.begin(), regions.end(), [&](const replay::RegionVerdict& r) { return !live->count(r.id); }),
                  regions.end());
  }
  const bool pass = e.verdict.pass();
  const std::string strength = poison ? replay::window_strength_note(*poison)
                                      : std::string("window weak: --weak, nothing poisoned");
  const std::string line = with_note(e.verdict.line(), strength);
  // Which operation last wrote each failing region (replayed op by op).
  std::vector<uint32_t> failing;
  for (const auto& r : e.verdict.regions)
    if (!r.result.pass()) failing.push_back(r.id);
  const std::map<uint32_t, size_t> writers = failing.empty() ? std::map<uint32_t, size_t>{} : wr.last_writers(failing);
  // Times: the window as judged, and the captured window beside it when kernels were swapped.
  const replay::WindowTiming t = wr.time(a.warmup, a.iterations);
  std::optional<replay::WindowTiming> base;
  if (variant) {
    replay::WindowReplay captured(s, o.window, {});
    base = captured.time(a.warmup, a.iterations);
  }
  if (a.json) {
    nlohmann::json j = {{"format", kWindowVerdictFormat}, {"version", kWindowVerdictVersion}};
    j["result"] = pass ? "PASS" : "FAIL";
    j["line"] = line;
    j["verdict"] = e.to_json();
    j["verdict"]["regions"] = e.verdict.to_json()["regions"];
    j["live_out"] = live ? nlohmann::json(std::vector<uint32_t>(live->begin(), live->end())) : nlohmann::json("all");
    j["live_out_mode"] = a.live_out == "all" || a.live_out == "auto" ? a.live_out : "list";
    j["not_live_out_differing"] = ignored;
    if (observed)
      j["observation"] = {{"horizon", observed->horizon},
                          {"launches_observed", observed->launches_observed},
                          {"ended", observed->ended},
                          {"live", observed->live()}};
    nlohmann::json dead = nlohmann::json::array();
    for (const auto& r : e.verdict.regions)
      if (!r.result.pass()) {
        if (const auto* d = dead_region(observed, r.id)) dead.push_back({{"region", r.id}, {"evidence", d->evidence}});
        else if (const auto* p = dead_piece_at(pieces, r.id, r.result.first_bad_offset))
          dead.push_back({{"region", r.id}, {"offset", p->piece.offset}, {"size", p->piece.size},
                          {"evidence", p->piece.evidence}});
      }
    j["dead_differing"] = dead;
    nlohmann::json dp = nlohmann::json::array();
    for (const auto& d : pieces)
      dp.push_back({{"region", d.region}, {"offset", d.piece.offset}, {"size", d.piece.size},
                    {"evidence", d.piece.evidence}, {"judged", !kept}});
    j["dead_pieces"] = dp;
    j["strength"] = strength;
    if (poison) {
      j["poisoned_regions"] = poison->poisoned;
      j["read_first_regions"] = poison->read_first;
      j["poisoned_bytes"] = poison->plan.bytes;
      nlohmann::json probed = nlohmann::json::array();
      for (const auto& p : poison->pieces)
        probed.push_back({{"region", p.region}, {"pieces", p.pieces}, {"poisoned", p.poisoned}});
      j["probed_pieces"] = probed;
    }
    nlohmann::json w = nlohmann::json::array();
    for (const auto& [id, op] : writers) w.push_back({{"region", id}, {"op", op}, {"name", wr.describe(op)}});
    j["last_writers"] = w;
    nlohmann::json sw = nlohmann::json::array();
    for (const auto& [i, v] : swaps) sw.push_back({{"op", i}, {"image", v.desc}});
    j["swaps"] = sw;
    j["replacement"] = replacement ? nlohmann::json(replacement->spec) : nlohmann::json(nullptr);
    j["timing"] = timing_json(t, o.window);
    if (base) {
      j["captured_timing"] = timing_json(*base, o.window);
      j["speedup"] = t.window_ms > 0 ? base->window_ms / t.window_ms : 0.0;
      j["speedup_kernels"] = t.kernels_ms > 0 ? base->kernels_ms / t.kernels_ms : 0.0;
    }
    j["notes"] = wr.notes();
    j["foreign_ops"] = o.window.foreign_ops;
    std::cout << j.dump(2) << std::endl;
  } else {
    for (const auto& n : wr.notes()) std::fprintf(stderr, "kerncap: note: %s\n", n.c_str());
    warn_foreign(o.window);
    std::cout << fmt::format("window of {} operations ({} kernels){}{}\n", o.window.ops.size(), o.window.kernels(),
                             swaps.empty() ? std::string() : fmt::format(", {} swapped", swaps.size()),
                             replacement ? fmt::format(", ops {} to {} replaced by {} launch(es)", replacement->from,
                                                       replacement->to, replacement->launches.size())
                                         : std::string());
    for (const auto& r : e.verdict.regions) {
      if (r.result.pass()) continue;
      const auto wit = writers.find(r.id);
      const auto* d = dead_region(observed, r.id);
      const auto* p = d ? nullptr : dead_piece_at(pieces, r.id, r.result.first_bad_offset);
      std::cout << fmt::format("  region {} ({} B at {}) differs: {}; last written by {}{}\n", r.id, r.size,
                               hex_addr(r.base), r.summary(),
                               wit == writers.end() ? std::string("no operation of this replay (the application wrote it)")
                                                    : wr.describe(wit->second),
                               d ? fmt::format("; a dead intermediate: not read after the window ({}), so --live-out "
                                               "auto does not judge it",
                                               d->evidence)
                               : p ? fmt::format("; its bytes {:#x}..{:#x}, where the first difference lies, are a dead "
                                                 "intermediate: the region is read after the window but not there ({}), "
                                                 "so --live-out auto does not judge them",
                                                 p->piece.offset, p->piece.offset + p->piece.size, p->piece.evidence)
                                   : std::string());
    }
    if (live && a.live_out == "auto" && observed)
      std::cout << fmt::format("  live-out auto: {} of the {} region(s) the window changed are read after it (observed "
                               "over {} launch(es), {})\n",
                               live->size(), observed->regions.size(), observed->launches_observed,
                               observed->ended == "horizon" ? "up to the horizon" : "until the application ended");
    if (!ignored.empty())
      std::cout << fmt::format("  {} region(s) outside --live-out differ and are not judged\n", ignored.size());
    if (kept) {
      std::cout << fmt::format("  live-out auto: {} dead piece(s) of regions read after the window not judged ({} B, "
                               "the captured window's bytes put back there):\n",
                               pieces.size(), kept->bytes());
      for (size_t i = 0; i < pieces.size() && i < 8; ++i)
        std::cout << fmt::format("    region {} bytes {:#x}..{:#x}: {}\n", pieces[i].region, pieces[i].piece.offset,
                                 pieces[i].piece.offset + pieces[i].piece.size, pieces[i].piece.evidence);
      if (pieces.size() > 8) std::cout << fmt::format("    ... and {} more\n", pieces.size() - 8);
    }
    print_times(t, o.window);
    if (base)
      std::cout << fmt::format("  captured window: span {:.4f} ms, kernels {:.4f} ms; as judged: span {:.4f} ms, kernels "
                               "{:.4f} ms: speed-up x{:.3f} (span), x{:.3f} (kernels)\n",
                               base->window_ms, base->kernels_ms, t.window_ms, t.kernels_ms,
                               t.window_ms > 0 ? base->window_ms / t.window_ms : 0.0,
                               t.kernels_ms > 0 ? base->kernels_ms / t.kernels_ms : 0.0);
    std::cout << line << "\n";
  }
  exit_code = pass ? 0 : 1;
}

void add_timing(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--warmup", a.warmup, "Untimed runs of the window first")->check(CLI::Range(0, 1000))->default_val(3);
  cmd->add_option("--iterations", a.iterations, "Timed runs of the window (medians)")
      ->check(CLI::Range(1, 100000))
      ->default_val(20);
  cmd->add_flag("--json", a.json, "Print JSON on stdout");
  cmd->add_flag("-q,--quiet", a.quiet, "Only errors and the result");
}

}  // namespace window_cmd

void add_window(CLI::App& app, int& exit_code) {
  using namespace window_cmd;
  auto* cmd = app.add_subcommand("window",
                                 "A window of launches: extract, list, replay, validate, reproducer (docs/window.md)");
  cmd->require_subcommand(1);
  cmd->footer(
      "A window is the operations one stream of the application ran from the Nth launch of kernel FROM through the\n"
      "Mth launch of kernel TO (counted from FROM's launch, on its stream): kernel launches with their images,\n"
      "parameters and attributes, memsets and device-to-device copies. BEFORE is every tracked byte at the window's\n"
      "start, AFTER every byte the window changed. extract writes OUT/Makefile (make run | time | validate) and\n"
      "OUT/README.md (the operations with their in-app times and shares) beside OUT/capture.\n"
      "Or one CUDA graph launch (--graph [PATTERN@]N): the graph's kernel, memset and copy nodes in a topological\n"
      "order, BEFORE before the graph launch, AFTER after it.\n"
      "Example: kerncap window extract --window rms_norm@2..silu_mul -o iso/win -- python layer.py\n"
      "Example: kerncap window extract --graph exp_kernel@3 -o iso/g -- python graph.py\n"
      "Example: kerncap window validate iso/win --swap 1=fused.cubin --live-out 5,7");

  auto ea = std::make_shared<ExtractArgs>();
  auto* ex = cmd->add_subcommand("extract", "Run the application and capture a window of its launches");
  ex->add_option("--window", ea->window,
                 "FROM[@N]..TO[@M]: from the Nth (from 0) launch matching FROM to the Mth launch matching TO on the same "
                 "stream, counted from FROM's launch (FROM's own launch counts when TO matches it too)")
      ->type_name("FROM[@N]..TO[@M]");
  ex->add_option("--graph", ea->graph,
                 "Instead of --window: one CUDA graph launch as the window, the Nth (from 0) launch of any graph (N), "
                 "or of the graphs holding a kernel matching PATTERN (PATTERN@N; PATTERN alone: N = 0); its kernel, "
                 "memset and copy nodes in a topological order")
      ->type_name("[PATTERN@]N");
  ex->add_option("--cmd", ea->request.cmd, "The application as one shell command line");
  ex->add_option("-o,--output", ea->output, "Output directory: the window goes to OUT/capture")->required();
  ex->add_flag("--regex", ea->request.regex, "FROM and TO (or --graph's PATTERN) are ECMAScript regular expressions");
  ex->add_flag("--continue", ea->request.keep_running, "Let the application run to completion after the window");
  ex->add_option("--observe", ea->request.window_observe,
                 "After the window, watch this many launches for reads of the regions it changed (--live-out auto); "
                 "0: none")
      ->check(CLI::Range(0, 1000000))
      ->default_val(256);
  ex->add_option("--store", ea->request.store, "A shared chunk store for the BEFORE memory (as extract --store)")
      ->type_name("DIR");
  ex->add_flag("--force", ea->request.force, "Replace an existing capture in the output directory");
  ex->add_flag("-v,--verbose", [r = &ea->request](int64_t n) { r->verbose = 1 + static_cast<int>(n); },
               "More output (repeatable)");
  ex->add_flag("-q,--quiet", ea->request.quiet, "Only errors");
  ex->add_flag("--json", ea->json, "Print the result as JSON on stdout");
  ex->add_option("app", ea->request.argv, "The application and its arguments (after --)");
  ex->callback([ea, &exit_code] { run_extract(*ea, exit_code); });

  auto info_dir = std::make_shared<std::string>();
  auto info_json = std::make_shared<bool>(false);
  auto* in = cmd->add_subcommand("info", "List a window's operations with their in-app times and shares");
  in->add_option("dir", *info_dir, "OUT or OUT/capture of `kerncap window extract`")->required();
  in->add_flag("--json", *info_json, "Print JSON on stdout");
  add_store_option(in);
  in->callback([info_dir, info_json, &exit_code] { run_info(*info_dir, *info_json, exit_code); });

  auto repro_dir = std::make_shared<std::string>();
  auto repro_json = std::make_shared<bool>(false);
  auto* rd = cmd->add_subcommand(
      "reproducer", "(Re)write a window capture's reproducer: OUT/Makefile (run, time, validate, info) and OUT/README.md");
  rd->add_option("dir", *repro_dir, "OUT or OUT/capture of `kerncap window extract`")->required();
  rd->add_flag("--json", *repro_json, "Print the files written as JSON on stdout");
  rd->footer("`kerncap window extract` writes them after every capture; this writes them again (a capture made before\n"
             "they existed, or files you deleted). The Makefile and README.md in OUT are replaced.");
  rd->callback([repro_dir, repro_json, &exit_code] { run_reproducer(*repro_dir, *repro_json, exit_code); });

  auto ra = std::make_shared<RunArgs>();
  auto* rp = cmd->add_subcommand("replay", "Restore BEFORE, replay the window's operations in order, time them");
  rp->add_option("dir", ra->dir, "OUT or OUT/capture of `kerncap window extract`")->required();
  add_timing(rp, *ra);
  add_store_option(rp);
  rp->callback([ra, &exit_code] { run_replay(*ra, exit_code); });

  auto va = std::make_shared<RunArgs>();
  auto* vd = cmd->add_subcommand(
      "validate", "Replay the window (with kernels swapped for variants) and judge the bytes it changed against AFTER");
  vd->add_option("dir", va->dir, "OUT or OUT/capture of `kerncap window extract`")->required();
  vd->add_option("--swap", va->swaps,
                 "INDEX=FILE: operation INDEX (a kernel launch, `kerncap window info`) runs the kernel of the same name "
                 "in FILE (cubin, fatbin or PTX) instead; repeatable")
      ->type_name("INDEX=FILE");
  vd->add_option("--live-out", va->live_out,
                 "The bytes judged: all (every byte the window changed, the default), auto (the regions the "
                 "application read after the window, observed at capture: window_liveout.json) or region ids (e.g. "
                 "3,5); differences elsewhere are counted, not judged")
      ->type_name("all|auto|ID,...");
  vd->add_option("--replace", va->replace,
                 "FROM..TO=launches.json: operations FROM to TO (inclusive) run the launches of new images in the "
                 "file instead, their parameters built from the window's regions (docs/window.md \"Replacements\")")
      ->type_name("FROM..TO=FILE");
  vd->add_flag("--weak", va->weak,
               "Do not poison: by default the window's write-only live-out bytes (probed on the captured window) are "
               "poisoned before the replay, so a replacement that skips a write fails");
  vd->add_option("--dtype", va->dtype, "Compare every byte as this type (fp32, fp16, bf16, ...)");
  vd->add_option("--atol", va->atol, "Absolute tolerance (with --dtype)");
  vd->add_option("--rtol", va->rtol, "Relative tolerance (with --dtype)");
  vd->add_flag("--exact", va->exact, "Compare a swapped window byte for byte");
  add_timing(vd, *va);
  add_store_option(vd);
  vd->callback([va, &exit_code] { run_validate(*va, exit_code); });
}

}  // namespace kerncap::cli
