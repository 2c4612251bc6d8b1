// `kerncap extract`: run the application with the capture library and take one launch.
// Parsing and printing only; the work is in src/extract (capture_run.hpp).
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "common/hex.hpp"
#include "extract/capture_run.hpp"
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
};

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
  auto* cmd = app.add_subcommand("extract", "Capture one launch of a kernel from a running application");
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
      "Example: kerncap extract vectorAdd --cmd \"./app --n 1000000\" -o iso/vadd");
  extract::Request& r = args->request;
  cmd->add_option("kernel", r.kernel, "Substring of the kernel's demangled (or mangled) name")->required();
  cmd->add_option("--cmd", r.cmd, "The application as one shell command line");
  cmd->add_option("-o,--output", args->output, "Output directory (the capture goes to OUT/capture)")->required();
  cmd->add_option("--dispatch", r.dispatch, "Capture the Nth matching launch, counting from 0")->default_val(0);
  cmd->add_flag("--regex", r.regex, "KERNEL is an ECMAScript regular expression");
  cmd->add_flag("--continue", r.keep_running, "Let the application run to completion after the capture");
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
