// `kerncap extract`: run the application with the capture library and take one launch.
// Parsing and printing only; the work is in src/extract (capture_run.hpp).
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/hex.hpp"
#include "common/error.hpp"
#include "extract/capture_run.hpp"
#include "extract/multi_run.hpp"
#include "extract/regime_run.hpp"
#include "extract/target_args.hpp"
#include "format/out_layout.hpp"
#include "format/regime_kernels.hpp"
#include "format/regimes_index.hpp"
#include "format/rank.hpp"
#include "names/collective.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;

namespace {

struct ExtractArgs {
  extract::Request request;
  std::string output;
  std::string source_dir;
  std::string compile_commands;
  std::string language = "auto";
  bool json = false;
  std::vector<std::string> kernels;  // --kernel, repeatable
  uint64_t top = 0;                  // --top N
  std::string from;                  // --from profile.json
  const CLI::Option* top_opt = nullptr;       // whether --top was given (0 is refused, not "absent")
  const CLI::Option* dispatch_opt = nullptr;  // whether --dispatch was given
  bool regimes = false;              // --regimes
  size_t max_regimes = 8;            // --max-regimes
};

// The targets the arguments name, in order (extract/target_args.hpp does the checking).
std::vector<extract::TargetRequest> collect_targets(ExtractArgs& a) {
  extract::Request& r = a.request;
  extract::TargetArgs t;
  t.positional = r.kernel;
  t.has_cmd = !r.cmd.empty();
  t.kernels = a.kernels;
  if (a.top_opt->count()) t.top = a.top;
  t.from = a.from;
  if (a.dispatch_opt->count()) t.dispatch = r.dispatch;
  t.regex = r.regex;
  extract::CollectedTargets c = extract::collect_targets(t);
  if (c.app_first_word) {
    r.argv.insert(r.argv.begin(), *c.app_first_word);
    r.kernel.clear();
  }
  for (const auto& note : c.notes) std::fprintf(stderr, "kerncap: note: %s\n", note.c_str());
  return std::move(c.targets);
}

// Several targets: one line per target, or the JSON index; exit 2 naming the missing ones.
void run_extract_many(ExtractArgs& a, int& exit_code) {
  const extract::MultiResult res = extract::run_captures(a.request);
  if (a.json) {
    nlohmann::json j = {{"output", res.out.string()},
                        {"application", res.stopped ? "stopped after the last capture" : res.app.describe()},
                        {"targets", nlohmann::json::array()}};
    for (const auto& t : res.targets) {
      nlohmann::json tj = {{"kernel", t.outcome.request.kernel},
                           {"match", format::to_string(t.outcome.request.match)},
                           {"dispatch", t.outcome.request.dispatch},
                           {"output", t.dir.string()},
                           {"captured", t.outcome.captured}};
      if (t.outcome.captured) {
        const auto& m = t.capture.manifest;
        tj.update({{"capture", t.capture.dir.string()},
                   {"captured_kernel", m.demangled_name},
                   {"mangled", m.mangled_name},
                   {"launch_index", m.launch_index},
                   {"regions", m.regions.size()},
                   {"before_bytes", m.before_bytes},
                   {"after_bytes", m.after_bytes}});
      } else {
        tj["why"] = t.outcome.why;
      }
      j["targets"].push_back(std::move(tj));
    }
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << fmt::format("{} of {} targets captured into {} (index: {})\n", res.targets.size() - res.missing(),
                             res.targets.size(), res.out.string(), std::string(format::out::kTargetsIndex));
    for (const auto& t : res.targets) {
      if (!t.outcome.captured) {
        std::cout << fmt::format("  {:<32} NOT captured ('{}', dispatch {})\n", t.outcome.dir, t.outcome.request.kernel,
                                 t.outcome.request.dispatch);
        continue;
      }
      const auto& m = t.capture.manifest;
      std::cout << fmt::format("  {:<32} {} (launch #{}, dispatch {}) {} regions, BEFORE {}, AFTER {}\n", t.outcome.dir,
                               names::is_nccl_kernel(m.mangled_name, m.demangled_name) ? m.mangled_name : m.demangled_name,
                               m.launch_index, m.dispatch, m.regions.size(), human_bytes(m.before_bytes),
                               human_bytes(m.after_bytes));
    }
    if (res.stopped) std::cout << "  the application was stopped after the last capture (--continue lets it finish)\n";
    else std::cout << "  the application " << res.app.describe() << "\n";
  }
  if (!res.stopped && !(res.app.exited && res.app.code == 0))
    std::fprintf(stderr, "kerncap: warning: the application %s\n", res.app.describe().c_str());
  if (res.missing()) extract::fail_missing(res);
  exit_code = 0;
}

// A regime's scalar arguments that tell it apart (" param 2 = 4096"), or "".
std::string params_column(const format::RegimeEntry& e) {
  const std::string text = format::varying_params_text(e.params);
  return text.empty() ? text : " " + text;
}

// --regimes: one capture per launch shape of each kernel named (KERNEL, --kernel, --top N);
// a table per kernel, or the indexes as JSON.
void run_extract_regimes(ExtractArgs& a, int& exit_code) {
  extract::Request& r = a.request;
  if (!a.from.empty())
    usage_error("--regimes profiles the application itself (its first run): drop --from (--top N picks from that run)");
  if (a.dispatch_opt->count()) usage_error("--regimes captures the first launch of every shape: drop --dispatch");
  extract::RegimeSelection sel;
  // With --kernel or --top and no --cmd, the first word after the options is the application
  // (as for several targets without --regimes).
  if (!r.kernel.empty() && r.cmd.empty() && (!a.kernels.empty() || a.top_opt->count())) {
    r.argv.insert(r.argv.begin(), r.kernel);
    r.kernel.clear();
  }
  if (!r.kernel.empty()) sel.patterns.push_back(r.kernel);
  for (const auto& k : a.kernels) {
    if (k.find('@') != std::string::npos && k.find_last_not_of("0123456789") == k.rfind('@'))
      usage_error(fmt::format("--kernel {} with --regimes: a regime set takes every launch shape, not launch @N", k));
    sel.patterns.push_back(k);
  }
  if (a.top_opt->count()) {
    if (a.top == 0) usage_error("--top 0: expected at least one kernel");
    sel.top = a.top;
  }
  sel.max = a.max_regimes;
  r.kernel.clear();
  const extract::RegimeResult res = extract::run_regimes(r, sel);
  for (const auto& note : res.notes) std::fprintf(stderr, "kerncap: note: %s\n", note.c_str());
  if (a.json) {
    nlohmann::json j;
    if (sel.flat()) {
      j = format::to_json(res.sets.at(0).index);
    } else {
      j = {{"kernels", nlohmann::json::array()}};
      for (const auto& s : res.sets) {
        nlohmann::json k = format::to_json(s.index);
        k["dir"] = s.dir;
        j["kernels"].push_back(std::move(k));
      }
    }
    j["output"] = res.captures.out.string();
    std::cout << j.dump(2) << std::endl;
  } else {
    if (!sel.flat())
      std::cout << fmt::format("regimes of {} kernel(s) into {} (index: {}; validate a variant of one with `kerncap "
                               "validate OUT/KK-<name> --cubin V`)\n",
                               res.sets.size(), res.captures.out.string(),
                               std::string(format::out::kRegimeKernelsIndex));
    for (const auto& s : res.sets) {
      const format::RegimesIndex& idx = s.index;
      const fs::path where = s.dir.empty() ? res.captures.out : res.captures.out / s.dir;
      std::cout << fmt::format("{} regime(s) of {} ({} launches, {:.3f} ms of GPU time, {:.1f}% of the application's) "
                               "into {} (index: {})\n",
                               idx.regimes.size(), idx.demangled, idx.launches, idx.time_ns / 1e6,
                               idx.app_time_ns ? 100.0 * static_cast<double>(idx.time_ns) / idx.app_time_ns : 0.0,
                               where.string(), std::string(format::out::kRegimesIndex));
      for (const auto& e : idx.regimes)
        std::cout << fmt::format("  {:<28} grid {}x{}x{} block {}x{}x{}{}{} {:>7} launches {:>6.1f}%  {}\n", e.dir,
                                 e.grid[0], e.grid[1], e.grid[2], e.block[0], e.block[1], e.block[2],
                                 e.dynamic_shared ? fmt::format(" smem {}", e.dynamic_shared) : "",
                                 params_column(e), e.launches,
                                 100 * e.share, e.captured ? "captured" : "NOT captured: " + e.why);
      std::cout << fmt::format("  captured regimes cover {:.1f}% of the kernel's GPU time\n", 100 * idx.coverage());
    }
  }
  if (res.captures.missing()) extract::fail_missing(res.captures);
  for (const auto& s : res.sets)
    for (const auto& e : s.index.regimes)
      if (!e.captured)
        input_error(fmt::format("regime {} was not captured: {}", s.dir.empty() ? e.dir : s.dir + "/" + e.dir, e.why));
  exit_code = 0;
}

extract::SourceOptions source_options(const ExtractArgs& a) {
  extract::SourceOptions o = a.request.source;
  if (!a.source_dir.empty()) o.source_dir = fs::absolute(a.source_dir);
  if (!a.compile_commands.empty()) o.compile_commands = fs::absolute(a.compile_commands);
  o.language = extract::language_from_string(a.language);
  return o;
}

// The binary the reproducer's Makefile calls: this one.
fs::path self_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("kerncap") : p;
}

void run_extract(ExtractArgs& a, int& exit_code) {
  extract::Request& r = a.request;
  r.output = a.output;
  r.source = source_options(a);
  r.kerncap = self_path();
  r.terse = a.json;
  if (a.regimes) {
    run_extract_regimes(a, exit_code);
    return;
  }
  std::vector<extract::TargetRequest> targets = collect_targets(a);
  if (targets.size() > 1) {
    r.targets = std::move(targets);
    run_extract_many(a, exit_code);
    return;
  }
  // One target: today's layout, OUT/capture.
  r.kernel = targets[0].kernel;
  r.dispatch = targets[0].dispatch;
  r.regex = targets[0].match == format::MatchKind::Regex;
  if (targets[0].match == format::MatchKind::Exact) r.targets = std::move(targets);
  const extract::Result res = extract::run_capture(r);
  const auto& m = res.capture.manifest;
  const fs::path& cap = res.capture.dir;
  if (a.json) {
    nlohmann::json j = {{"output", res.out.string()},
                        {"capture", cap.string()},
                        {"kernel", m.demangled_name},
                        {"mangled", m.mangled_name},
                        {"dispatch", m.dispatch},
                        {"regions", m.regions.size()},
                        {"before_bytes", m.before_bytes},
                        {"after_bytes", m.after_bytes},
                        {"capture_seconds", m.capture_seconds},
                        {"application", res.stopped ? "stopped after capture" : res.app.describe()},
                        {"device", m.device_ordinal}};
    if (res.rank >= 0) j["rank"] = {{"rank", res.rank}, {"source", res.rank_source}};
    j.update(extract::to_json(res.reproducer, res.out));
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << fmt::format("captured {}\n  launch #{} (dispatch {}) grid {}x{}x{} block {}x{}x{} shared {} B\n"
                             "  {} regions, BEFORE {}, AFTER {} ({} runs), {:.2f} s\n  -> {}\n",
                             m.demangled_name, m.launch_index, m.dispatch, m.grid[0], m.grid[1], m.grid[2], m.block[0],
                             m.block[1], m.block[2], m.shared_mem_bytes, m.regions.size(), human_bytes(m.before_bytes),
                             human_bytes(m.after_bytes), m.after.size(), m.capture_seconds, cap.string());
    if (res.rank >= 0) std::cout << fmt::format("  in rank {} (from {}) on CUDA device {}\n", res.rank, res.rank_source, m.device_ordinal);
    if (res.stopped && res.rank >= 0)
      std::cout << fmt::format("  rank {} was stopped after the capture (exit status {}), so the job's launcher ended "
                               "the other ranks: torchrun sends them SIGTERM and reports a failed rank (expected); "
                               "--continue lets the job finish\n",
                               res.rank, format::kStoppedRankExitStatus);
    else if (res.stopped) std::cout << "  the application was stopped after the capture (--continue lets it finish)\n";
    else std::cout << "  the application " << res.app.describe() << "\n";
    for (const auto& line : extract::describe(res.reproducer, res.out)) std::cout << line << "\n";
  }
  if (names::is_nccl_kernel(m.mangled_name, m.demangled_name))
    std::fprintf(stderr, "kerncap: warning: %s\n", names::nccl_capture_note().c_str());
  if (!res.stopped && !(res.app.exited && res.app.code == 0))
    std::fprintf(stderr, "kerncap: warning: the application %s after the capture\n", res.app.describe().c_str());
  exit_code = 0;
}

}  // namespace

void add_extract(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExtractArgs>();
  auto* cmd = app.add_subcommand("extract", "Capture one launch of a kernel (or of several) from a running application");
  cmd->footer(
      "The application runs with libkerncap.so injected (CUDA_INJECTION64_PATH). At the chosen launch kerncap\n"
      "synchronises, saves the allocations the launch can reach through pointers (--closure) and the kernel's\n"
      "module globals, skipping zeros (BEFORE), lets the launch run, and saves the bytes it changed (AFTER), the\n"
      "parameters and the code image into OUT/capture.\n"
      "Then it looks for the kernel's source (--source-dir, --compile-commands) and writes a reproducer\n"
      "into OUT: Makefile (run, validate, recompile, run-variant, validate-variant, ncu, sanitize, sass),\n"
      "README.md, compile.json and, when the source is found, kernel_variant.cu with src/.\n"
      "Multi-process jobs: --rank R captures in rank R only (the others run untouched); without --continue that\n"
      "rank then exits with status 75 so that torchrun/mpirun/srun end the others (docs/multigpu.md).\n"
      "Several targets in one run: --kernel A --kernel B@3 ... and/or --top N --from profile.json (no KERNEL\n"
      "then). OUT becomes their parent: OUT/NN-<name>/ per target (each laid out as a one-target OUT),\n"
      "OUT/targets.json listing target -> directory and whether it was captured. All share --store. The\n"
      "application stops after the last target's capture (--continue: it runs to its end); a target never\n"
      "launched is named at the end with exit status 2, and the others stay. One target keeps OUT/capture.\n"
      "Regimes (--regimes): two runs of the application, the first profiled (every launch timed), the second\n"
      "capturing; the application must launch the kernel in the same order in both (checked: a regime whose\n"
      "capture has another shape is refused). Shapes only: launches whose grid is the same but whose scalar\n"
      "parameters differ are one regime. Several kernels in the same two runs: --regimes --kernel A --kernel B\n"
      "and/or --top N (the N kernels with the most GPU time in the profiled run); each kernel's regime set goes\n"
      "to OUT/KK-<name>/ (validate a variant with `kerncap validate OUT/KK-<name> --cubin V`; `kerncap validate\n"
      "OUT` judges every kernel's captured image), OUT/regime-kernels.json lists them.\n"
      "Example: kerncap extract vectorAdd --cmd \"./app --n 1000000\" -o iso/vadd\n"
      "Example: kerncap extract --top 5 --from profile.json -o iso/top5 -- python train.py\n"
      "Example: kerncap extract rms_norm --regimes -o iso/norm -- python generate.py\n"
      "Example: kerncap extract --regimes --top 6 -o iso/model -- python generate.py");
  extract::Request& r = args->request;
  cmd->add_option("kernel", r.kernel, "Substring of the kernel's demangled (or mangled) name (one target)");
  cmd->add_option("--kernel", args->kernels,
                  "A target, repeatable: substring (or, with --regex, regex) of a kernel name, PATTERN@N for its "
                  "Nth matching launch (else --dispatch); each goes to its own OUT/NN-<name>/")
      ->type_name("PATTERN[@N]")
      ->allow_extra_args(false);
  args->top_opt =
      cmd->add_option("--top", args->top, "Targets: the N kernels with the most GPU time in --from (first launch of each); with --regimes, in "
                      "the profiled run (every launch shape of each)");
  cmd->add_option("--from", args->from, "profile.json written by `kerncap profile -o` (with --top)")
      ->type_name("FILE");
  cmd->add_option("--cmd", r.cmd, "The application as one shell command line");
  cmd->add_option("-o,--output", args->output,
                  "Output directory (one target: the capture goes to OUT/capture; several: OUT/NN-<name>/capture)")
      ->required();
  args->dispatch_opt = cmd->add_option("--dispatch", r.dispatch,
                                       "Capture the Nth matching launch, counting from 0 (for KERNEL, and each "
                                       "--kernel without @N)")
                           ->default_val(0);
  cmd->add_flag("--regex", r.regex, "KERNEL and the --kernel patterns are ECMAScript regular expressions");
  cmd->add_flag("--regimes", args->regimes,
                "One capture per launch shape (grid, block, cluster, dynamic shared memory) of KERNEL: a profiled run "
                "finds the shapes and each one's share of the kernel's GPU time, a second run captures the first "
                "launch of each into OUT/NN-<name>/; OUT/regimes.json says what each stands for, and `kerncap "
                "validate OUT --cubin V` judges V on every regime with a weighted speed-up. With --kernel A --kernel B "
                "or --top N: the regimes of each kernel, in OUT/KK-<name>/");
  cmd->add_option("--max-regimes", args->max_regimes, "With --regimes: capture at most N shapes of each kernel, the largest shares")
      ->check(CLI::Range(size_t{1}, format::kMaxRegimes))
      ->default_val(8);
  cmd->add_flag("--continue", r.keep_running,
                "Let the application run to completion after the capture (of the last target)");
  cmd->add_option_function<std::string>(
         "--closure",
         [&r](const std::string& v) {
           if (v != "reachable" && v != "all") throw CLI::ValidationError("--closure", "must be reachable or all");
           r.closure_all = v == "all";
         },
         "Which regions to store: reachable (default: those the launch's parameters and module globals point "
         "into, transitively; the rest is recorded by address and size and replayed filled with 0xCB) or all")
      ->type_name("reachable|all");
  cmd->add_option("--store", r.store,
                  "A shared chunk store: BEFORE memory goes there in content-addressed chunks, each kept once "
                  "across the captures that share the store (weights of one model); replay, validate, info, "
                  "footprint and prune then need --store DIR too (or KERNCAP_STORE)")
      ->type_name("DIR");
  cmd->add_option("--rank", r.rank,
                  "Multi-process jobs: capture only in the process of this rank (its RANK, LOCAL_RANK, "
                  "OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID, first set wins; else its place in the order "
                  "the processes initialised CUDA); the other ranks run untouched")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--device", r.device,
                  "Count only launches on this CUDA device ordinal of the process (as the process numbers its "
                  "devices, after CUDA_VISIBLE_DEVICES)")
      ->check(CLI::Range(0, 1023));
  cmd->add_flag("--force", r.force, "Replace an existing capture in the output directory");
  cmd->add_flag("-v,--verbose", [&r](int64_t n) { r.verbose = 1 + static_cast<int>(n); }, "More output (repeatable)");
  cmd->add_flag("-q,--quiet", r.quiet, "Only errors");
  cmd->add_flag("--json", args->json, "Print the result as JSON on stdout");
  cmd->add_option("--source-dir", args->source_dir,
                  "Source tree the application was built from: find the kernel's definition for the reproducer");
  cmd->add_option("--compile-commands", args->compile_commands,
                  "compile_commands.json of that build (else one is looked for next to --source-dir)");
  cmd->add_option("-D,--define", r.source.defines, "Macro for the reproducer's recompile, NAME or NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--language", args->language, "Kernel language: auto, cuda (C++ source finder) or triton")
      ->check(CLI::IsMember({"auto", "cuda", "triton"}))
      ->default_val("auto");
  cmd->add_option("app", r.argv, "The application and its arguments (after --)");
  cmd->callback([args, &exit_code] { run_extract(*args, exit_code); });
}

}  // namespace kerncap::cli
