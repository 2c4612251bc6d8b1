// `kerncap profile`: run the application with libkerncap.so in profile mode, then rank
// its kernels by GPU time. The work lives in src/profile; this file parses, runs, prints.
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/launcher.hpp"
#include "common/error.hpp"
#include "names/demangle.hpp"
#include "profile/aggregate.hpp"
#include "profile/report_json.hpp"
#include "profile/table.hpp"
#include "profile/trace.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;
using namespace kerncap::profile;

namespace {

constexpr const char* kFooter = R"(The application runs with libkerncap.so injected (CUDA_INJECTION64_PATH) in profile mode:
CUPTI records every kernel execution in every process that initialises CUDA (child
processes included) and each process writes its records at exit. kerncap then ranks the
kernels by total GPU time and classifies them (kind: cublas, aten, triton, user, ...;
category: gemm, attention, norm, ...).

Examples:
  kerncap profile -- ./app --size 4096
  kerncap profile --top 50 --filter 'gemm|attn' -o profile.json --trace trace.json -- python train.py
  kerncap profile --from records/            analyze records kept earlier with --records

To capture a kernel from the table, give its name (or, exactly, the "name" field of
profile.json) to `kerncap extract`; --dispatch N picks the Nth launch (from 0) whose name
contains the pattern, counted per process in launch order. profile.json lists, per kernel
and process, the dispatch value of every launch.

Exit status: the application's own when it failed (the profile is still printed), 2 when
no kernel ran or the records cannot be read, 0 otherwise.)";

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
  bool json = false;
  int verbose = 0;
};

size_t terminal_width() {
  struct winsize ws{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) >= 60) return static_cast<size_t>(std::atoi(c));
  return 140;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The records directory: --records DIR (kept), or a temporary one removed at the end.
struct RecordsDir {
  fs::path path;
  bool temporary = false;
  ~RecordsDir() {
    std::error_code ec;
    if (temporary) fs::remove_all(path, ec);
  }
};

void prepare_records_dir(const ProfileArgs& a, RecordsDir& dir) {
  if (!a.records.empty()) {
    dir.path = fs::absolute(a.records);
    if (fs::exists(dir.path) && (!fs::is_directory(dir.path) || !fs::is_empty(dir.path)))
      usage_error(fmt::format("--records {} exists and is not an empty directory; choose a new one", a.records));
    fs::create_directories(dir.path);
    return;
  }
  std::string tmpl = (fs::temp_directory_path() / "kerncap-profile-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    usage_error(fmt::format("cannot create a temporary directory under {}: set TMPDIR to a writable place",
                            fs::temp_directory_path().string()));
  dir.path = tmpl;
  dir.temporary = true;
}

// How the application itself ended, as an exit status for us to pass on (0 = fine).
int app_status(const AppExit& app) { return app.exited ? app.code : 128 + app.code; }

// Why there is nothing to show, as precisely as the records allow.
std::string explain_empty(const std::vector<ProcessRecords>& records, const AppExit* app) {
  if (records.empty()) {
    if (app && app->exited && app->code == 127)
      return "the application could not be started (see the message above)";
    return fmt::format(
        "no process of the application initialised CUDA with kerncap attached{}: it may not use the GPU, it may "
        "have failed before initialising CUDA, or another tool replaced CUDA_INJECTION64_PATH",
        app ? " (it " + app->describe() + ")" : "");
  }
  for (const auto& p : records)
    for (const auto& e : p.errors)
      if (e.code == "multiple_subscribers")
        return fmt::format("nothing was recorded: in pid {} {}", p.info.pid, e.message);
  for (const auto& p : records)
    if (!p.errors.empty())
      return fmt::format("nothing was recorded: in pid {}: {}. CUPTI from CUDA 13 needs a driver that supports CUDA "
                         "13 (nvidia-smi shows \"CUDA Version: 13.x\"); run with -v for details",
                         p.info.pid, p.errors[0].message);
  return fmt::format("the application launched no kernels ({} process{} initialised CUDA{})", records.size(),
                     records.size() == 1 ? "" : "es", app ? " and " + app->describe() : "");
}

// A directory name for a kernel's capture: the last name component, identifier chars only.
std::string capture_dir_name(const KernelStats& k) {
  std::string f = names::function_name(k.demangled);
  if (size_t p = f.rfind("::"); p != std::string::npos) f = f.substr(p + 2);
  std::string out;
  for (char c : f)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') out += c;
  return out.empty() ? "kernel" : out.substr(0, 40);
}

// "next: kerncap extract ..." for the first row of the table.
std::string next_step(const Summary& s, const ProfileArgs& a, const std::regex* filter) {
  for (const auto& k : s.kernels) {
    if (filter && !std::regex_search(k.mangled, *filter) && !std::regex_search(k.demangled, *filter)) continue;
    for (const auto& p : k.processes) {
      if (p.dispatch.empty()) continue;
      std::string app = "-- APP ARGS";
      if (!a.cmd.empty()) {
        app = "--cmd " + shell_quote(a.cmd);
      } else if (!a.argv.empty()) {
        app = "--";
        for (const auto& arg : a.argv) app += " " + shell_quote(arg);
      }
      std::string where = s.processes.size() > 1 ? fmt::format(" (its first launch in pid {})", p.pid) : "";
      return fmt::format("Next: capture the top kernel{} with\n  kerncap extract {} --dispatch {} -o iso/{} {}\n",
                         where, shell_quote(k.mangled), p.dispatch.front(),
                         capture_dir_name(k), app);
    }
    return "The top kernel ran only inside CUDA graphs, which `extract --dispatch` cannot target.\n";
  }
  return "";
}

void write_json_file(const nlohmann::json& doc, const std::string& file) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) usage_error(fmt::format("cannot write {}: check the directory exists and is writable", file));
  out << doc.dump(1) << '\n';
  if (!out.flush()) usage_error(fmt::format("writing {} failed (disk full?)", file));
}

void run_profile(const ProfileArgs& a, int& exit_code) {
  const bool from = !a.from.empty();
  if (from && (!a.argv.empty() || !a.cmd.empty()))
    usage_error("--from analyzes records already collected: give no application with it");
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

  RecordsDir dir;
  std::unique_ptr<AppExit> app;
  RunInfo run;
  if (from) {
    dir.path = a.from;
  } else {
    if (const char* other = std::getenv("CUDA_INJECTION64_PATH"))
      usage_error(fmt::format("CUDA_INJECTION64_PATH is already set ({}): another CUDA tool (nsys, ncu...) is "
                              "attached; kerncap cannot profile beside it. Run kerncap outside that tool",
                              other));
    prepare_records_dir(a, dir);
    std::map<std::string, std::string> env = {
        {"CUDA_INJECTION64_PATH", find_injection_library().string()},
        {"KERNCAP_MODE", "profile"},
        {"KERNCAP_OUTPUT", dir.path.string()},
        {"KERNCAP_VERBOSE", std::to_string(a.verbose)},
    };
    if (!a.json) std::fprintf(stderr, "kerncap: profiling the application (records in %s)\n", dir.path.c_str());
    app = std::make_unique<AppExit>(a.cmd.empty() ? run_application(a.argv, false, env)
                                                  : run_application({a.cmd}, true, env));
    run.ran = true;
    run.command = a.cmd.empty() ? a.argv : std::vector<std::string>{"/bin/sh", "-c", a.cmd};
    run.exited = app->exited;
    run.code = app->code;
    run.description = app->describe();
  }

  const std::vector<ProcessRecords> records = read_records(dir.path);
  const Summary s = aggregate(records);
  const nlohmann::json doc = report_json(s, run);
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
    std::string procs = format_processes(s);
    bool trouble = procs.find("\n      ") != std::string::npos;
    if (s.processes.size() > 1 || trouble) std::cout << "\nProcesses:\n" << procs;
    std::cout << '\n' << next_step(s, a, filter.get());
  }
  if (!a.json) {
    if (!a.output.empty()) std::fprintf(stderr, "kerncap: wrote %s\n", a.output.c_str());
    if (!a.trace.empty()) std::fprintf(stderr, "kerncap: wrote %s (open it in https://ui.perfetto.dev)\n", a.trace.c_str());
    if (!a.records.empty()) std::fprintf(stderr, "kerncap: records kept in %s\n", dir.path.c_str());
  }

  exit_code = 0;
  if (!s.launches) {
    std::fprintf(stderr, "kerncap: error: %s\n", explain_empty(records, app.get()).c_str());
    exit_code = ::kerncap::exit_code(ErrorKind::Input);
  }
  if (app && app_status(*app) != 0) {
    std::fprintf(stderr, "kerncap: the application %s; %s\n", app->describe().c_str(),
                 s.launches ? "the profile above covers what ran until then" : "nothing was profiled");
    exit_code = app_status(*app);
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
  cmd->add_option("--cmd", args->cmd, "The application as one shell command line (instead of -- APP ARGS)");
  cmd->add_flag("-v,--verbose", args->verbose, "Let the injected library report progress (repeatable)");
  cmd->add_option("app", args->argv, "The application and its arguments (after --)");
  cmd->callback([args, &exit_code] { run_profile(*args, exit_code); });
}

}  // namespace kerncap::cli
