#include "replay/window_validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap::replay {
namespace {

std::string wv_ms(std::optional<uint64_t> ns) { return ns ? fmt::format("{:.4f}", *ns / 1e6) : std::string("-"); }

nlohmann::json wv_opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string wv_ratio_text(double replay_ms, std::optional<uint64_t> in_app_ns) {
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

TimeCompare compare_times(const WindowTiming& t, const format::Window& w) {
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

// The dead pieces of the regions read after the window (none without a version 2 observation).
std::vector<WindowDeadPiece> dead_pieces(Session& s, const format::Window& w,
                                         const std::optional<format::WindowLiveOut>& observed,
                                         const std::function<WindowReplay&()>& captured) {
  std::vector<WindowDeadPiece> out;
  if (!observed) return out;
  const format::Capture& cap = s.capture();
  const format::Manifest& m = cap.manifest;
  // Besides the pointers: where the last writer changes, from one replay of the captured window
  // operation by operation, for the regions whose pieces are decided.
  std::vector<uint32_t> pieced;
  for (const auto& lr : observed->regions)
    if (lr.read && lr.reads_complete) pieced.push_back(lr.id);
  std::map<uint32_t, std::vector<uint64_t>> writer_cuts;
  if (!pieced.empty()) writer_cuts = captured().last_writer_cuts(pieced);
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
    for (const auto& p : params) add_pointer_cuts(p, reg.base, reg.size, &cuts);
    if (auto it = writer_cuts.find(lr.id); it != writer_cuts.end())
      cuts.insert(cuts.end(), it->second.begin(), it->second.end());
    std::vector<std::pair<uint64_t, uint64_t>> changed;
    for (const auto& r : m.after)
      if (r.region == lr.id) changed.emplace_back(r.offset, r.size);
    for (auto& piece : window_pieces(reg.size, std::move(changed), std::move(cuts), lr))
      if (!piece.read) out.push_back({lr.id, index, std::move(piece)});
  }
  return out;
}

// The dead piece of region `id` that holds region offset `at`, or null.
const WindowDeadPiece* dead_piece_at(const std::vector<WindowDeadPiece>& pieces, uint32_t id,
                                     std::optional<uint64_t> at) {
  if (!at) return nullptr;
  for (const auto& d : pieces)
    if (d.region == id && *at >= d.piece.offset && *at - d.piece.offset < d.piece.size) return &d;
  return nullptr;
}

}  // namespace

std::optional<std::set<uint32_t>> parse_window_live_out(const std::string& s, const format::Manifest& m,
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

WindowValidation validate_window(Session& s, const format::Window& window, const WindowValidateRequest& r) {
  const format::Capture& cap = s.capture();
  WindowValidation v;
  v.window = window;
  v.observed = format::read_window_liveout(cap.dir);
  v.live = parse_window_live_out(r.live_out, cap.manifest, v.observed, r.dir);
  v.live_out_mode = r.live_out == "all" || r.live_out == "auto" ? r.live_out : "list";
  v.replacement = r.replacement;
  for (const auto& [i, img] : r.swaps) v.swaps.emplace_back(i, img.desc);
  const bool variant = !r.swaps.empty() || r.replacement;
  JudgeOverrides over = r.judge;
  over.no_determinism = true;  // the determinism check replays the first kernel alone: not a window's
  EvaluateOptions eo;
  eo.time = false;
  eo.policy = load_policy(over, cap);
  // The captured window is judged byte for byte (the evidence that the replay reproduces it);
  // with a swap, the judge's variant rules apply (typed regions within tolerance).
  if (!variant) eo.policy.exact = true;
  // Under auto, the dead pieces of live regions are not judged: the captured window's bytes
  // there are put back after the judged replay.
  // The captured window, its modules loaded once for every step that replays it as captured.
  std::optional<WindowReplay> captured_replay;
  const std::function<WindowReplay&()> captured = [&]() -> WindowReplay& {
    if (!captured_replay) captured_replay.emplace(s, window, std::map<size_t, VariantImage>{});
    return *captured_replay;
  };
  v.pieces = dead_pieces(s, window, v.observed, captured);
  std::optional<WindowKeptBytes> kept;
  if (r.live_out == "auto" && !v.pieces.empty()) {
    std::vector<KeptRange> ranges;
    for (const auto& d : v.pieces) ranges.push_back({d.index, d.piece.offset, d.piece.size});
    kept.emplace(s, captured(), std::move(ranges));
    v.kept_bytes = kept->bytes();
  }
  // Strong: the window's write-only live-out bytes, probed on the captured window, are poisoned
  // before the judged replay by the one poison code (window_poison.hpp).
  if (!r.weak) {
    v.poison = probe_window_poison(s, captured(), v.live);
  }
  const PoisonPlan* plan = v.poison && v.poison->weak_reason.empty() ? &v.poison->plan : nullptr;
  if (plan) poison_restores(s, *plan);
  WindowReplay wr(s, window, r.swaps, r.replacement ? &*r.replacement : nullptr);
  struct Active {  // the replay the caller's replacement may reach, for as long as it lives
    const std::function<void(WindowReplay*)>& hook;
    Active(const std::function<void(WindowReplay*)>& h, WindowReplay* w) : hook(h) {
      if (hook) hook(w);
    }
    ~Active() {
      if (hook) hook(nullptr);
    }
  } active(r.on_replay, &wr);
  Evaluator ev(s, plan);
  v.evaluation = ev.evaluate(nullptr, eo, [&](CUstream st) {
    wr.enqueue(st);
    if (kept) kept->put_back(st);
  });
  s.set_restore_filter({});
  if (v.live) {
    auto& regions = v.evaluation.verdict.regions;
    for (const auto& reg : regions)
      if (!v.live->count(reg.id) && reg.result.mismatches) v.ignored.push_back(reg.id);
    regions.erase(std::remove_if(regions.begin(), regions.end(),
                                 [&](const RegionVerdict& reg) { return !v.live->count(reg.id); }),
                  regions.end());
  }
  v.pass = v.evaluation.verdict.pass();
  v.strength = v.poison ? window_strength_note(*v.poison) : std::string("window weak: --weak, nothing poisoned");
  v.line = with_note(v.evaluation.verdict.line(), v.strength);
  // Which operation last wrote each failing region (replayed op by op).
  std::vector<uint32_t> failing;
  for (const auto& reg : v.evaluation.verdict.regions)
    if (!reg.result.pass()) failing.push_back(reg.id);
  if (!failing.empty())
    for (const auto& [id, op] : wr.last_writers(failing)) {
      v.last_writer_ops[id] = op;
      v.last_writers[id] = wr.describe(op);
    }
  // Times: the window as judged, and the captured window beside it when kernels were swapped.
  v.timing = wr.time(r.warmup, r.iterations);
  if (variant) {
    v.captured_timing = captured().time(r.warmup, r.iterations);
  }
  v.notes = wr.notes();
  return v;
}

nlohmann::json window_timing_json(const WindowTiming& t, const format::Window& w) {
  nlohmann::json j = {{"iterations", t.iterations},
                      {"window_ms", t.window_ms},
                      {"kernels_ms", t.kernels_ms},
                      {"kernels_warm_ms", wv_opt(t.kernels_warm_ms)},
                      {"kernels_cold_ms", wv_opt(t.kernels_cold_ms)},
                      {"kernels_method", t.kernels_method},
                      {"cache", t.cache},
                      {"cache_why", t.cache_why},
                      {"op_ms", t.op_ms},
                      {"op_method", t.op_method}};
  j["in_app_window_ms"] = w.in_app_window_ns ? nlohmann::json(*w.in_app_window_ns / 1e6) : nlohmann::json(nullptr);
  j["in_app_kernels_ms"] = w.in_app_kernels_ns ? nlohmann::json(*w.in_app_kernels_ns / 1e6) : nlohmann::json(nullptr);
  const TimeCompare c = compare_times(t, w);
  j["window_ratio"] = wv_opt(c.span_ratio);
  j["kernels_ratio"] = wv_opt(c.kernels_ratio);
  j["kernels_within_10pct"] = c.kernels_ratio ? nlohmann::json(c.kernels_within) : nlohmann::json(nullptr);
  j["window_busy_ratio"] = wv_opt(c.span_busy_ratio);
  j["in_app_gaps_ms"] = wv_opt(c.in_app_gaps_ms);
  j["in_app_gap_share"] = wv_opt(c.in_app_gap_share);
  return j;
}

std::string window_times_text(const WindowTiming& t, const format::Window& w) {
  const TimeCompare c = compare_times(t, w);
  std::string out = fmt::format(
      "  kernels' GPU time:  replay {:.4f} ms ({}, L2 {}; warm {}, cold {}), in-app {} ms, {}{}\n", t.kernels_ms,
      t.kernels_method, t.cache, t.kernels_warm_ms ? fmt::format("{:.4f}", *t.kernels_warm_ms) : std::string("-"),
      t.kernels_cold_ms ? fmt::format("{:.4f}", *t.kernels_cold_ms) : std::string("-"), wv_ms(w.in_app_kernels_ns),
      wv_ratio_text(t.kernels_ms, w.in_app_kernels_ns),
      c.kernels_ratio ? (c.kernels_within ? ": within ±10 %" : ": outside ±10 %") : "");
  out += fmt::format("  window span:        replay {:.4f} ms (GPU, every operation queued first: no host gap), "
                     "in-app {} ms, {}\n",
                     t.window_ms, wv_ms(w.in_app_window_ns), wv_ratio_text(t.window_ms, w.in_app_window_ns));
  if (c.in_app_gaps_ms && c.span_busy_ratio)
    out += fmt::format("    the in-app span holds {:.4f} ms ({:.0f} %) of host gaps between launches (launching "
                       "and kerncap's recording); less those, the in-app busy time is {} ms: replay span / busy "
                       "{:.2f} (the replay span holds the GPU's own gaps between operations)\n",
                       *c.in_app_gaps_ms, 100 * *c.in_app_gap_share, wv_ms(w.in_app_kernels_ns), *c.span_busy_ratio);
  if (!t.cache_why.empty()) out += "    L2: " + t.cache_why + "\n";
  return out;
}

nlohmann::json window_verdict_json(const WindowValidation& v) {
  const Evaluation& e = v.evaluation;
  nlohmann::json j = {{"format", kWindowVerdictFormat}, {"version", kWindowVerdictVersion}};
  j["result"] = v.pass ? "PASS" : "FAIL";
  j["line"] = v.line;
  j["verdict"] = e.to_json();
  j["verdict"]["regions"] = e.verdict.to_json()["regions"];
  j["live_out"] = v.live ? nlohmann::json(std::vector<uint32_t>(v.live->begin(), v.live->end())) : nlohmann::json("all");
  j["live_out_mode"] = v.live_out_mode;
  j["not_live_out_differing"] = v.ignored;
  if (v.observed)
    j["observation"] = {{"horizon", v.observed->horizon},
                        {"launches_observed", v.observed->launches_observed},
                        {"ended", v.observed->ended},
                        {"live", v.observed->live()}};
  nlohmann::json dead = nlohmann::json::array();
  for (const auto& reg : e.verdict.regions)
    if (!reg.result.pass()) {
      if (const auto* d = dead_region(v.observed, reg.id)) dead.push_back({{"region", reg.id}, {"evidence", d->evidence}});
      else if (const auto* p = dead_piece_at(v.pieces, reg.id, reg.result.first_bad_offset))
        dead.push_back({{"region", reg.id}, {"offset", p->piece.offset}, {"size", p->piece.size},
                        {"evidence", p->piece.evidence}});
    }
  j["dead_differing"] = dead;
  nlohmann::json dp = nlohmann::json::array();
  for (const auto& d : v.pieces)
    dp.push_back({{"region", d.region}, {"offset", d.piece.offset}, {"size", d.piece.size},
                  {"evidence", d.piece.evidence}, {"judged", !v.kept_bytes}});
  j["dead_pieces"] = dp;
  j["strength"] = v.strength;
  if (v.poison) {
    j["poisoned_regions"] = v.poison->poisoned;
    j["read_first_regions"] = v.poison->read_first;
    j["poisoned_bytes"] = v.poison->plan.bytes;
    nlohmann::json probed = nlohmann::json::array();
    for (const auto& p : v.poison->pieces)
      probed.push_back({{"region", p.region}, {"pieces", p.pieces}, {"poisoned", p.poisoned}});
    j["probed_pieces"] = probed;
  }
  nlohmann::json w = nlohmann::json::array();
  for (const auto& [id, op] : v.last_writer_ops) w.push_back({{"region", id}, {"op", op}, {"name", v.last_writers.at(id)}});
  j["last_writers"] = w;
  nlohmann::json sw = nlohmann::json::array();
  for (const auto& [i, desc] : v.swaps) sw.push_back({{"op", i}, {"image", desc}});
  j["swaps"] = sw;
  j["replacement"] = v.replacement ? nlohmann::json(v.replacement->spec) : nlohmann::json(nullptr);
  j["timing"] = window_timing_json(v.timing, v.window);
  if (v.captured_timing) {
    const WindowTiming& base = *v.captured_timing;
    j["captured_timing"] = window_timing_json(base, v.window);
    j["speedup"] = v.timing.window_ms > 0 ? base.window_ms / v.timing.window_ms : 0.0;
    j["speedup_kernels"] = v.timing.kernels_ms > 0 ? base.kernels_ms / v.timing.kernels_ms : 0.0;
  }
  j["notes"] = v.notes;
  j["foreign_ops"] = v.window.foreign_ops;
  return j;
}

std::string window_verdict_text(const WindowValidation& v) {
  const Evaluation& e = v.evaluation;
  const format::Window& w = v.window;
  std::string out;
  std::string replaced;
  if (v.replacement)
    replaced = v.replacement->call ? fmt::format(", ops {} to {} replaced by {}", v.replacement->from, v.replacement->to,
                                                 v.replacement->call_name)
                                   : fmt::format(", ops {} to {} replaced by {} launch(es)", v.replacement->from,
                                                 v.replacement->to, v.replacement->launches.size());
  out += fmt::format("window of {} operations ({} kernels){}{}\n", w.ops.size(), w.kernels(),
                     v.swaps.empty() ? std::string() : fmt::format(", {} swapped", v.swaps.size()), replaced);
  for (const auto& reg : e.verdict.regions) {
    if (reg.result.pass()) continue;
    const auto wit = v.last_writers.find(reg.id);
    const auto* d = dead_region(v.observed, reg.id);
    const auto* p = d ? nullptr : dead_piece_at(v.pieces, reg.id, reg.result.first_bad_offset);
    out += fmt::format("  region {} ({} B at {}) differs: {}; last written by {}{}\n", reg.id, reg.size,
                       hex_addr(reg.base), reg.summary(),
                       wit == v.last_writers.end() ? std::string("no operation of this replay (the application wrote it)")
                                                   : wit->second,
                       d ? fmt::format("; a dead intermediate: not read after the window ({}), so --live-out "
                                       "auto does not judge it",
                                       d->evidence)
                       : p ? fmt::format("; its bytes {:#x}..{:#x}, where the first difference lies, are a dead "
                                         "intermediate: the region is read after the window but not there ({}), "
                                         "so --live-out auto does not judge them",
                                         p->piece.offset, p->piece.offset + p->piece.size, p->piece.evidence)
                           : std::string());
  }
  if (v.live && v.live_out_mode == "auto" && v.observed)
    out += fmt::format("  live-out auto: {} of the {} region(s) the window changed are read after it (observed "
                       "over {} launch(es), {})\n",
                       v.live->size(), v.observed->regions.size(), v.observed->launches_observed,
                       v.observed->ended == "horizon" ? "up to the horizon" : "until the application ended");
  if (!v.ignored.empty())
    out += fmt::format("  {} region(s) outside --live-out differ and are not judged\n", v.ignored.size());
  if (v.kept_bytes) {
    out += fmt::format("  live-out auto: {} dead piece(s) of regions read after the window not judged ({} B, "
                       "the captured window's bytes put back there):\n",
                       v.pieces.size(), *v.kept_bytes);
    for (size_t i = 0; i < v.pieces.size() && i < 8; ++i)
      out += fmt::format("    region {} bytes {:#x}..{:#x}: {}\n", v.pieces[i].region, v.pieces[i].piece.offset,
                         v.pieces[i].piece.offset + v.pieces[i].piece.size, v.pieces[i].piece.evidence);
    if (v.pieces.size() > 8) out += fmt::format("    ... and {} more\n", v.pieces.size() - 8);
  }
  out += window_times_text(v.timing, w);
  if (v.captured_timing) {
    const WindowTiming& base = *v.captured_timing;
    const WindowTiming& t = v.timing;
    out += fmt::format("  captured window: span {:.4f} ms, kernels {:.4f} ms; as judged: span {:.4f} ms, kernels "
                       "{:.4f} ms: speed-up x{:.3f} (span), x{:.3f} (kernels)\n",
                       base.window_ms, base.kernels_ms, t.window_ms, t.kernels_ms,
                       t.window_ms > 0 ? base.window_ms / t.window_ms : 0.0,
                       t.kernels_ms > 0 ? base.kernels_ms / t.kernels_ms : 0.0);
  }
  out += v.line + "\n";
  return out;
}

nlohmann::json window_buffers_json(Session& s, const format::Window& w) {
  const format::Capture& cap = s.capture();
  const format::Manifest& m = cap.manifest;
  std::map<uint32_t, uint64_t> changed;
  for (const auto& a : m.after) changed[a.region] += a.size;
  nlohmann::json regions = nlohmann::json::array();
  struct Placed {
    uint32_t id;
    uint64_t base, size;
  };
  std::vector<Placed> placed;
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const format::Region& reg = m.regions[i];
    const uint64_t at = s.address(i);
    placed.push_back({reg.id, at, reg.size});
    regions.push_back({{"id", reg.id},
                       {"address", at},
                       {"captured_address", reg.base},
                       {"size", reg.size},
                       {"kind", to_string(reg.kind)},
                       {"changed_bytes", changed.count(reg.id) ? changed[reg.id] : 0}});
  }
  nlohmann::json ops = nlohmann::json::array();
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const format::WindowOp& op = w.ops[i];
    nlohmann::json o = {{"index", i}, {"kind", to_string(op.kind)}, {"stream", op.stream}};
    if (op.kind == format::WindowOp::Kind::EventRecord || op.kind == format::WindowOp::Kind::EventWait) {
      o["event"] = op.event;  // the streams' order: nothing in memory
    } else if (op.kind == format::WindowOp::Kind::Kernel) {
      std::vector<uint8_t> params = cap.read(format::window_params_file(i), "a window kernel's parameters");
      s.relocations().rewrite(params.data(), params.size(), 0);
      o["mangled"] = op.mangled;
      o["grid"] = op.grid;
      o["block"] = op.block;
      o["shared_mem_bytes"] = op.shared_mem_bytes;
      std::string hex;
      hex.reserve(params.size() * 2);
      for (uint8_t b : params) hex += fmt::format("{:02x}", b);
      o["params"] = hex;
      nlohmann::json ptrs = nlohmann::json::array();
      for (size_t off = 0; off + 8 <= params.size(); off += 8) {
        uint64_t word = 0;
        std::memcpy(&word, params.data() + off, 8);
        for (const auto& p : placed)
          if (word >= p.base && word - p.base < p.size) {
            ptrs.push_back({{"offset", off}, {"address", word}, {"region", p.id}, {"region_offset", word - p.base}});
            break;
          }
      }
      o["pointers"] = ptrs;
    } else if (op.kind == format::WindowOp::Kind::Memset) {
      o["dst"] = s.translate(op.dst);
      o["bytes"] = op.width * op.element_size;
    } else {
      o["dst"] = s.translate(op.dst);
      o["bytes"] = op.bytes;
      if (op.kind == format::WindowOp::Kind::CopyD2D) o["src"] = s.translate(op.src);
    }
    ops.push_back(std::move(o));
  }
  return {{"regions", regions}, {"ops", ops}, {"stream", reinterpret_cast<uint64_t>(s.stream())}};
}

}  // namespace kerncap::replay
