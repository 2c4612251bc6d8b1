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
#include "cli/python_module.hpp"
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
#include "replay/window_validate.hpp"
#include "reproducer/window_reproducer.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;
// Named, not anonymous: the CLI is built as unity files, where other commands' anonymous
// namespaces share this one's scope.
namespace window_cmd {

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
    nlohmann::json j = {{"index", i}, {"kind", to_string(op.kind)}, {"name", op_name(op)}, {"stream", op.stream}};
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
    std::cout << fmt::format("  {:>3}  {:<9} {:<60} {:>11} {:>7}{}\n", i, to_string(op.kind), shorten(op_name(op)) + reproducer::window_op_stream(op),
                             ms(op.in_app_ns), share, extra);
  }
}

// ---- extract ----
struct ExtractArgs {
  extract::Request request;
  std::string window, graph, range, output;
  bool json = false;
};

void run_extract(ExtractArgs& a, int& exit_code) {
  extract::Request& r = a.request;
  r.output = a.output;
  r.kerncap = window_self_exe();
  if (int{!a.window.empty()} + int{!a.graph.empty()} + int{!a.range.empty()} != 1)
    usage_error("give one of --window FROM..TO, --graph [PATTERN@]N and --range NAME[@N]");
  const extract::WindowEndSpec end = !a.graph.empty()   ? extract::parse_graph_spec(a.graph, r.regex)
                                     : !a.range.empty() ? extract::parse_range_spec(a.range, r.regex)
                                                        : extract::parse_window_spec(a.window, &r);
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
  std::string replace_py;  // FROM..TO=MODULE:FUNCTION (kerncap.window_replace)
  std::string python;      // the interpreter for --replace-py
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
    j["timing"] = replay::window_timing_json(t, o.window);
    j["notes"] = wr.notes();
    std::cout << j.dump(2) << std::endl;
  } else {
    for (const auto& n : wr.notes()) std::fprintf(stderr, "kerncap: note: %s\n", n.c_str());
    warn_foreign(o.window);
    std::cout << fmt::format("window of {} operations ({} kernels), {} iterations (median)\n", o.window.ops.size(),
                             o.window.kernels(), t.iterations);
    print_ops(o.window, &t);
    std::cout << replay::window_times_text(t, o.window);
  }
  exit_code = 0;
}

void run_validate(const RunArgs& a, int& exit_code) {
  const Opened o = open_window(a.dir);
  const format::Capture& cap = *o.capture;
  replay::WindowValidateRequest r;
  r.dir = a.dir;
  r.live_out = a.live_out;
  r.swaps = read_swaps(a.swaps);
  if (!a.replace.empty()) r.replacement = replay::read_replacement(a.replace, o.window, cap.manifest);
  if (!a.dtype.empty()) r.judge.dtype = a.dtype;
  r.judge.atol = a.atol;
  r.judge.rtol = a.rtol;
  r.judge.exact = a.exact;
  r.weak = a.weak;
  r.warmup = a.warmup;
  r.iterations = a.iterations;
  replay::Session s(session_options(o, a.quiet || a.json));
  const replay::WindowValidation v = replay::validate_window(s, o.window, r);
  if (a.json) {
    std::cout << replay::window_verdict_json(v).dump(2) << std::endl;
  } else {
    for (const auto& n : v.notes) std::fprintf(stderr, "kerncap: note: %s\n", n.c_str());
    warn_foreign(o.window);
    std::cout << replay::window_verdict_text(v);
  }
  exit_code = v.pass ? 0 : 1;
}

// --replace-py FROM..TO=MODULE:FUNCTION: the replacement is a Python callable, so the validation
// runs in Python (kerncap.window_replace), through the same engine's C ABI (kc_window_validate).
[[noreturn]] void run_validate_py(const RunArgs& a) {
  PythonModule m;
  m.module = "kerncap.window_replace";
  m.args = {a.dir, "--replace", a.replace_py, "--live-out", a.live_out, "--warmup", std::to_string(a.warmup),
            "--iterations", std::to_string(a.iterations)};
  for (const auto& sw : a.swaps) m.args.insert(m.args.end(), {"--swap", sw});
  if (!a.dtype.empty()) m.args.insert(m.args.end(), {"--dtype", a.dtype});
  if (a.atol) m.args.insert(m.args.end(), {"--atol", fmt::format("{}", *a.atol)});
  if (a.rtol) m.args.insert(m.args.end(), {"--rtol", fmt::format("{}", *a.rtol)});
  if (a.exact) m.args.push_back("--exact");
  if (a.weak) m.args.push_back("--weak");
  if (a.json) m.args.push_back("--json");
  if (a.quiet) m.args.push_back("--quiet");
  m.python = a.python;
  m.needs = "the module of the callable, and what it imports (torch, triton, ...)";
  exec_python_module(m);
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
      "Or one NVTX range (--range NAME[@N]): the window's stream's operations from the first kernel launch after the\n"
      "Nth push of a range named NAME (torch.cuda.nvtx.range_push, nvtxRangePushA/Ex) to its pop on that thread.\n"
      "Example: kerncap window extract --window rms_norm@2..silu_mul -o iso/win -- python layer.py\n"
      "Example: kerncap window extract --graph exp_kernel@3 -o iso/g -- python graph.py\n"
      "Example: kerncap window extract --range block@2 -o iso/r -- python model.py\n"
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
  ex->add_option("--range", ea->range,
                 "Instead of --window: one NVTX range as the window, the Nth (from 0) push of a range named NAME "
                 "(its text equal to NAME, or NAME then \", \" as emit_nvtx writes; a regex with --regex): the "
                 "operations on the stream of its first kernel launch, from that launch to the range's pop on the "
                 "pushing thread. torch.profiler.record_function emits NVTX only under "
                 "torch.autograd.profiler.emit_nvtx: use torch.cuda.nvtx.range_push/range_pop")
      ->type_name("NAME[@N]");
  ex->add_option("--cmd", ea->request.cmd, "The application as one shell command line");
  ex->add_option("-o,--output", ea->output, "Output directory: the window goes to OUT/capture")->required();
  ex->add_flag("--regex", ea->request.regex, "FROM and TO (or --graph's PATTERN, --range's NAME) are ECMAScript regular expressions");
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
  vd->add_option("--replace-py", va->replace_py,
                 "FROM..TO=MODULE:FUNCTION: operations FROM to TO (inclusive) are replaced by a Python callable "
                 "FUNCTION(window, stream) that enqueues its work on the stream, given the window's buffers "
                 "(kerncap.window; runs in Python through the same engine, docs/window.md \"Replacements\")")
      ->type_name("FROM..TO=MODULE:FUNCTION");
  vd->add_option("--python", va->python, "The Python interpreter for --replace-py (default $KERNCAP_PYTHON, else python3)");
  vd->add_flag("--weak", va->weak,
               "Do not poison: by default the window's write-only live-out bytes (probed on the captured window) are "
               "poisoned before the replay, so a replacement that skips a write fails");
  vd->add_option("--dtype", va->dtype, "Compare every byte as this type (fp32, fp16, bf16, ...)");
  vd->add_option("--atol", va->atol, "Absolute tolerance (with --dtype)");
  vd->add_option("--rtol", va->rtol, "Relative tolerance (with --dtype)");
  vd->add_flag("--exact", va->exact, "Compare a swapped window byte for byte");
  add_timing(vd, *va);
  add_store_option(vd);
  vd->callback([va, &exit_code] {
    if (va->replace_py.empty()) return run_validate(*va, exit_code);
    if (!va->replace.empty()) usage_error("give either --replace or --replace-py");
    run_validate_py(*va);
  });
}

}  // namespace kerncap::cli
