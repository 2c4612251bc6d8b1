// `kerncap profile`: run the application with libkerncap.so in profile mode, then rank
// its kernels by GPU time. The work lives in src/extract (running) and src/profile
// (aggregating); this file parses and prints.
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/locate_repos.hpp"
#include "common/error.hpp"
#include "extract/environment.hpp"
#include "extract/profile_run.hpp"
#include "profile/aggregate.hpp"
#include "profile/report_json.hpp"
#include "profile/table.hpp"
#include "names/match.hpp"
#include "profile/trace.hpp"
#include "source/locate_output.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;
using namespace kerncap::profile;

namespace {

constexpr const char* kFooter = R"(The application runs with libkerncap.so injected (CUDA_INJECTION64_PATH) in profile mode:
CUPTI records every kernel execution in every process that initialises CUDA (child
processes included) and each process writes its records at exit. kerncap then ranks the
kernels by total GPU time and classifies them (kind: cublas, aten, triton, user, ...;
category: gemm, attention, norm, ...).

With --source-repo DIR (repeatable; checked-out repositories such as PyTorch, vLLM,
triton_kernels, CUTLASS, llama.cpp), each ranked kernel also gets the file and line that
define it and a test command (see `kerncap locate --help`), in the table's "Sources"
section and as "source"/"test" in profile.json.

Examples:
  kerncap profile -- ./app --size 4096
  kerncap profile --source-repo ~/pytorch --source-repo ~/vllm -- python serve.py
  kerncap profile --top 50 --filter 'gemm|attn' -o profile.json --trace trace.json -- python train.py
  kerncap profile --from records/            analyze records kept earlier with --records

To capture a kernel from the table, give its name (or, exactly, the "name" field of
profile.json) to `kerncap extract`; --dispatch N picks the Nth launch (from 0) whose name
contains the pattern, counted per process in launch order. profile.json lists, per kernel
and process, the dispatch value of every launch.

Exit status: the application's own when it failed (the profile is still printed), 2 when
no kernel ran or the records cannot be read, 0 otherwise.)";

constexpr uint32_t kDefaultSample = 10;

struct ProfileArgs {
  std::vector<std::string> argv;
  std::string cmd;
  size_t top = 20;
  std::string filter;
  std::string output;
  std::string trace;
  std::string records;
  std::string from;
  size_t width = 0;
  // Sampled timing's N (Config::profile_sample); 1 times every launch. On by default: on
  // launch-heavy applications CUPTI's per-kernel records are most of what profiling costs
  // (docs/profile.md, Overhead), and a process's first 10000 launches are timed anyway.
  uint32_t sample = kDefaultSample;
  const CLI::Option* sample_option = nullptr;  // given on the command line: count() > 0
  bool json = false;
  int verbose = 0;
  std::vector<std::string> source_repos;
  std::vector<std::string> rules;
};

size_t terminal_width() {
  struct winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) >= 60) return static_cast<size_t>(std::atoi(c));
  return 140;
}

void write_json_file(const nlohmann::json& doc, const std::string& file) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) usage_error(fmt::format("cannot write {}: check the directory exists and is writable", file));
  out << doc.dump(1) << '\n';
  if (!out.flush()) usage_error(fmt::format("writing {} failed (disk full?)", file));
}

// "source"/"test" for every kernel of the report, and the rows of the table's Sources
// section (ranked kernels that pass the filter, as many as the table shows).
std::string add_sources(const ProfileArgs& a, const Summary& s, nlohmann::json& doc, const names::Matcher* filter) {
  source::Locator loc(source::load_locate_rules(a.rules), index_repos(a.source_repos, a.json));
  std::string section;
  size_t shown = 0;
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const auto& k = s.kernels[i];
    const source::LocateResult r = loc.locate(k.mangled);
    const nlohmann::json j = source::to_json(r);
    auto& row = doc["kernels"][i];
    row["source"] = j["source"];
    row["source_status"] = j["status"];
    row["test"] = j["test"];
    if (r.status == source::LocateStatus::ClosedSource) row["library"] = j["library"];
    const bool pass = !filter || filter->matches(k.mangled, k.demangled);
    if (!pass || (a.top && shown >= a.top)) continue;
    ++shown;
    section += fmt::format("{:>3} {}\n", i + 1, source::short_where(r));
    if (!r.test_command.empty()) section += fmt::format("    test: (cd {} && {})\n", r.test_cwd.string(), r.test_command);
  }
  return section;
}

void run_profile(const ProfileArgs& a, int& exit_code) {
  const bool from = !a.from.empty();
  if (from && (!a.argv.empty() || !a.cmd.empty()))
    usage_error("--from analyzes records already collected: give no application with it");
  if (from && a.sample_option && a.sample_option->count() > 0)
    usage_error("--sample is chosen when the application runs: the records given with --from say how they were timed");
  if (!from && a.cmd.empty() == a.argv.empty())
    usage_error("give the application after -- (kerncap profile -- ./app args), or as --cmd \"./app args\"");
  std::unique_ptr<std::regex> filter;
  if (!a.filter.empty()) {
    try {
      filter = std::make_unique<std::regex>(a.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      usage_error(fmt::format("--filter '{}' is not a valid regular expression: {}", a.filter, e.what()));
    }
  }

  std::unique_ptr<extract::RecordsDir> kept;
  fs::path dir;
  std::unique_ptr<extract::AppExit> app;
  RunInfo run;
  const extract::AppCommand command{a.cmd, a.argv};
  if (from) {
    dir = a.from;
  } else {
    extract::refuse_other_tool(extract::read_host_env(), "profile");  // before making the records folder
    kept = std::make_unique<extract::RecordsDir>(a.records);
    dir = kept->path();
    if (!a.json) std::fprintf(stderr, "kerncap: profiling the application (records in %s)\n", dir.c_str());
    app = std::make_unique<extract::AppExit>(extract::run_profiled(command, dir, a.verbose, a.sample >= 2 ? a.sample : 0));
    run = extract::run_info(command, *app);
  }

  const std::vector<ProcessRecords> records = read_records(dir);
  const Summary s = aggregate(records);
  nlohmann::json doc = report_json(s, run);
  std::string sources;
  if (!a.source_repos.empty()) {
    std::optional<names::Matcher> m;
    if (filter) m = names::Matcher(a.filter, true);  // validated above
    sources = add_sources(a, s, doc, m ? &*m : nullptr);
  }
  if (!a.output.empty()) write_json_file(doc, a.output);
  if (!a.trace.empty()) write_trace_file(records, a.trace);

  if (a.json) {
    std::cout << doc.dump() << std::endl;  // one line, last on stdout: the Python API reads it
  } else if (s.launches) {
    TableOptions opt;
    opt.top = a.top;
    opt.filter = a.filter;
    opt.width = a.width ? a.width : terminal_width();
    std::cout << '\n' << format_table(s, opt);
    if (!sources.empty()) std::cout << "\nSources:\n" << sources;
    std::string procs = format_processes(s);
    bool trouble = procs.find("\n      ") != std::string::npos;
    if (s.processes.size() > 1 || trouble) std::cout << "\nProcesses:\n" << procs;
    if (const std::string ranks = format_ranks(s); !ranks.empty())
      std::cout << "\nKernel time per rank and device (extract --rank R --device N captures there):\n" << ranks;
    std::cout << '\n' << extract::next_step(s, command, filter.get());
  }
  if (!a.json) {
    if (!a.output.empty()) std::fprintf(stderr, "kerncap: wrote %s\n", a.output.c_str());
    if (!a.trace.empty()) std::fprintf(stderr, "kerncap: wrote %s (open it in https://ui.perfetto.dev)\n", a.trace.c_str());
    if (!a.records.empty()) std::fprintf(stderr, "kerncap: records kept in %s\n", dir.c_str());
  }

  exit_code = 0;
  if (!s.launches) {
    std::fprintf(stderr, "kerncap: error: %s\n", extract::explain_empty(records, app.get()).c_str());
    exit_code = ::kerncap::exit_code(ErrorKind::Input);
  }
  if (app && extract::app_status(*app) != 0) {
    std::fprintf(stderr, "kerncap: the application %s; %s\n", app->describe().c_str(),
                 s.launches ? "the profile above covers what ran until then" : "nothing was profiled");
    exit_code = extract::app_status(*app);
  }
}

}  // namespace

void add_profile(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ProfileArgs>();
  auto* cmd = app.add_subcommand("profile", "Rank the application's kernels by GPU time, classify them, export a trace");
  cmd->footer(kFooter);
  cmd->add_option("--top", args->top, "Rows to show (0 = all)")->default_val(20);
  cmd->add_option("--filter", args->filter, "Only kernels whose mangled or demangled name matches this regex");
  cmd->add_option("-o,--output", args->output, "Write the full profile (names, statistics, dispatch indices) as JSON");
  cmd->add_option("--trace", args->trace, "Write a Chrome trace-event file (Perfetto, chrome://tracing)");
  cmd->add_flag("--json", args->json, "Print the full profile as one JSON line on stdout instead of the table");
  cmd->add_option("--records", args->records, "Keep the per-process record files in this new directory");
  cmd->add_option("--from", args->from, "Analyze records kept with --records instead of running an application");
  cmd->add_option("--width", args->width, "Table width in columns (default: the terminal's)");
  args->sample_option = cmd->add_option("--sample", args->sample,
                  "Sampled timing: every launch is counted (calls and dispatch indices stay exact), but after a "
                  "process's first 10000 launches only the last 10000 of every N x 10000 launches are timed; such "
                  "totals are estimates, marked ~ (docs/profile.md). 1: time every launch")
      ->check(CLI::Range(1, 1000))
      ->default_val(kDefaultSample);
  cmd->add_option("--cmd", args->cmd, "The application as one shell command line (instead of -- APP ARGS)");
  cmd->add_flag("-v,--verbose", args->verbose, "Let the injected library report progress (repeatable)");
  cmd->add_option("--source-repo", args->source_repos,
                  "A checked-out repository in which to find each kernel's source and tests (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--rules", args->rules, "Extra locate rules (TOML) for --source-repo (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("app", args->argv, "The application and its arguments (after --)");
  cmd->callback([args, &exit_code] { run_profile(*args, exit_code); });
}

}  // namespace kerncap::cli
