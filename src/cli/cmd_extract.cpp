// `kerncap extract`: run the application with the capture library and take one launch.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/launcher.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/capture_dir.hpp"
#include "names/closest.hpp"
#include "reproducer/extract_step.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;

namespace {

struct ExtractArgs {
  std::string kernel;
  std::string cmd;
  std::vector<std::string> argv;
  std::string output;
  uint64_t dispatch = 0;
  bool regex = false;
  bool keep_running = false;
  bool force = false;
  int verbose = 1;
  bool quiet = false;
  bool json = false;
  // Source finder and reproducer.
  std::string source_dir;
  std::string compile_commands;
  std::vector<std::string> defines;
  std::string language = "auto";
};

reproducer::SourceOptions source_options(const ExtractArgs& a) {
  reproducer::SourceOptions o;
  if (!a.source_dir.empty()) o.source_dir = fs::absolute(a.source_dir);
  if (!a.compile_commands.empty()) o.compile_commands = fs::absolute(a.compile_commands);
  o.defines = a.defines;
  o.language = reproducer::language_from_string(a.language);
  return o;
}

// The binary the reproducer's Makefile calls: this one.
fs::path self_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("kerncap") : p;
}

std::vector<nlohmann::json> read_events(const fs::path& dir) {
  std::vector<nlohmann::json> events;
  if (!fs::exists(dir)) return events;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.path().filename().string().starts_with("events-")) continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) events.push_back(j);
    }
  }
  return events;
}

void prepare_output(const ExtractArgs& a, const fs::path& out) {
  if (fs::exists(out) && !fs::is_directory(out)) usage_error(fmt::format("{} exists and is not a directory", out.string()));
  if (fs::exists(out) && !fs::is_empty(out)) {
    if (!a.force)
      usage_error(fmt::format("output directory {} already exists; pass --force to replace the capture in it "
                              "(files kerncap did not write are kept)",
                              out.string()));
    for (const auto& e : fs::directory_iterator(out)) {
      std::string n = e.path().filename().string();
      if (n == format::kCaptureDirName || n == ".kerncap" || n.starts_with("capture.partial-") || n == "triton" ||
          n == "kernel_variant.py" || n == "reproducer.py" || n == "kerncap_repro" || n == "candidate.cubin" ||
          n == "candidate.json")
        fs::remove_all(e.path());
    }
  }
  fs::create_directories(out / ".kerncap");
}

// Why nothing was captured, as precisely as the events allow.
std::string diagnose(const ExtractArgs& a, const std::vector<nlohmann::json>& events, const AppExit& app) {
  std::vector<std::string> seen, errors, skipped;
  std::set<uint64_t> matches;
  bool started = false, graphs = false;
  for (const auto& e : events) {
    std::string ev = e.value("event", "");
    if (ev == "start") started = true;
    else if (ev == "seen") seen.push_back(e.value("demangled", e.value("mangled", "")));
    else if (ev == "match") matches.insert(e.value("index", uint64_t{0}));
    else if (ev == "error") errors.push_back(e.value("what", ""));
    else if (ev == "skipped") skipped.push_back(e.value("mangled", ""));
    else if (ev == "graph_launch") graphs = true;
  }
  std::string msg;
  std::string app_state = fmt::format("the application {}", app.describe());
  if (!app.exited && app.code) app_state += " before the target launch";
  if (!errors.empty()) {
    msg = fmt::format("the capture failed inside the application: {}", errors.front());
    for (size_t i = 1; i < errors.size(); ++i) msg += "\n  also: " + errors[i];
    return msg + fmt::format("\n({})", app_state);
  }
  if (!started)
    return fmt::format("{} and never initialised CUDA with kerncap attached (it may not use the GPU, may have "
                       "failed to start, or CUDA_INJECTION64_PATH was overridden)",
                       app_state);
  if (seen.empty()) msg = fmt::format("{} without launching any kernel", app_state);
  else if (matches.empty()) {
    auto close = names::closest_names(a.kernel, seen, 8);
    msg = fmt::format("no launched kernel matches '{}'; {} ({} distinct kernels seen). Closest names:", a.kernel,
                      app_state, seen.size());
    for (const auto& n : close) msg += "\n  " + n;
  } else if (matches.count(a.dispatch)) {
    msg = fmt::format("the target launch of '{}' was reached but the capture did not complete: {}", a.kernel,
                      app_state);
  } else {
    msg = fmt::format("'{}' matched only {} launch(es) but --dispatch {} asks for launch #{} (counting from 0); {}",
                      a.kernel, matches.size(), a.dispatch, a.dispatch, app_state);
  }
  if (!skipped.empty())
    msg += fmt::format("\n{} matching launch(es) were skipped because their stream was capturing a CUDA graph",
                       skipped.size());
  if (graphs) msg += "\nnote: the application launched CUDA graphs; kernels inside graph launches are not seen";
  return msg;
}

// Where the kerncap Python package lives (the Triton shim and reproducer generator).
fs::path python_dir() {
  if (const char* p = std::getenv("KERNCAP_PYTHON_DIR")) return p;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path installed = exe.parent_path() / "../share/kerncap/python";
  if (fs::exists(installed / "kerncap")) return fs::canonical(installed);
  return fs::path(KERNCAP_SOURCE_DIR) / "python";
}

// Python applications get the Triton compile-metadata shim (inert unless Triton is used).
void add_triton_shim(std::map<std::string, std::string>& env, const fs::path& out) {
  fs::path shim = python_dir() / "kerncap" / "triton_shim";
  if (!fs::exists(shim)) return;
  const char* old = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] = shim.string() + (old && *old ? std::string(":") + old : "");
  env["KERNCAP_TRITON_OUT"] = (out / "triton").string();
}

// After a capture of a Triton kernel: kernel_variant.py, reproducer.py, name_map.json.
void write_triton_reproducer(const fs::path& out, bool quiet) {
  fs::path records = out / "triton" / "records";
  if (!fs::exists(records) || fs::is_empty(records)) return;
  const char* py = std::getenv("KERNCAP_PYTHON");
  std::map<std::string, std::string> env = {{"PYTHONPATH", python_dir().string()}};
  AppExit r = run_application({py ? py : "python3", "-m", "kerncap.triton_repro", out.string()}, false, env);
  if (r.exited && r.code == 0) {
    if (!quiet) std::fprintf(stderr, "kerncap: wrote the Triton reproducer (kernel_variant.py, reproducer.py)\n");
  } else {
    std::fprintf(stderr, "kerncap: note: no Triton reproducer: the generator %s (see above)\n", r.describe().c_str());
  }
}

void run_extract(const ExtractArgs& a, int& exit_code) {
  if (a.cmd.empty() == a.argv.empty())
    usage_error("give the application either as --cmd \"./app args\" or after -- (but not both)");
  if (a.regex) {
    try {
      std::regex re(a.kernel);
    } catch (const std::regex_error& e) {
      usage_error(fmt::format("--regex '{}' is not a valid regular expression: {}", a.kernel, e.what()));
    }
  }
  if (const char* other = std::getenv("CUDA_INJECTION64_PATH"))
    usage_error(fmt::format("CUDA_INJECTION64_PATH is already set ({}): another CUDA tool (nsys, ncu...) is "
                            "attached; kerncap cannot run beside it",
                            other));
  const reproducer::SourceOptions src = source_options(a);
  reproducer::check_source_options(src);  // before the application runs
  fs::path out = fs::absolute(a.output);
  prepare_output(a, out);
  fs::path lib = find_injection_library();
  std::map<std::string, std::string> env = {
      {"CUDA_INJECTION64_PATH", lib.string()},
      {"KERNCAP_MODE", "capture"},
      {"KERNCAP_OUTPUT", out.string()},
      {"KERNCAP_KERNEL", a.kernel},
      {"KERNCAP_REGEX", a.regex ? "1" : "0"},
      {"KERNCAP_DISPATCH", std::to_string(a.dispatch)},
      {"KERNCAP_CONTINUE", a.keep_running ? "1" : "0"},
      {"KERNCAP_VERBOSE", std::to_string(a.quiet ? 0 : a.verbose)},
  };
  add_triton_shim(env, out);
  if (!a.quiet) std::fprintf(stderr, "kerncap: running the application to capture '%s' (dispatch %llu)\n",
                             a.kernel.c_str(), static_cast<unsigned long long>(a.dispatch));
  AppExit app = a.cmd.empty() ? run_application(a.argv, false, env) : run_application({a.cmd}, true, env);
  auto events = read_events(out / ".kerncap");
  fs::path cap = out / format::kCaptureDirName;
  if (!fs::exists(cap / format::kManifestName)) fail(ErrorKind::Input, diagnose(a, events, app));

  format::Capture c = format::open_capture(cap);
  const auto& m = c.manifest;
  write_triton_reproducer(out, a.quiet || a.json);
  bool stopped = std::any_of(events.begin(), events.end(), [](auto& e) { return e.value("event", "") == "stopping"; });
  const reproducer::Outcome repro = reproducer::make_reproducer(out, src, self_path());
  if (a.json) {
    nlohmann::json j = {{"output", out.string()},
                        {"capture", cap.string()},
                        {"kernel", m.demangled_name},
                        {"mangled", m.mangled_name},
                        {"dispatch", m.dispatch},
                        {"regions", m.regions.size()},
                        {"before_bytes", m.before_bytes},
                        {"after_bytes", m.after_bytes},
                        {"capture_seconds", m.capture_seconds},
                        {"application", stopped ? "stopped after capture" : app.describe()}};
    j.update(reproducer::to_json(repro, out));
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << fmt::format("captured {}\n  launch #{} (dispatch {}) grid {}x{}x{} block {}x{}x{} shared {} B\n"
                             "  {} regions, BEFORE {}, AFTER {} ({} runs), {:.2f} s\n  -> {}\n",
                             m.demangled_name, m.launch_index, m.dispatch, m.grid[0], m.grid[1], m.grid[2], m.block[0],
                             m.block[1], m.block[2], m.shared_mem_bytes, m.regions.size(), human_bytes(m.before_bytes),
                             human_bytes(m.after_bytes), m.after.size(), m.capture_seconds, cap.string());
    if (stopped) std::cout << "  the application was stopped after the capture (--continue lets it finish)\n";
    else std::cout << "  the application " << app.describe() << "\n";
    for (const auto& line : reproducer::describe(repro, out)) std::cout << line << "\n";
  }
  if (!stopped && !(app.exited && app.code == 0))
    std::fprintf(stderr, "kerncap: warning: the application %s after the capture\n", app.describe().c_str());
  exit_code = 0;
}

}  // namespace

void add_extract(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExtractArgs>();
  auto* cmd = app.add_subcommand("extract", "Capture one launch of a kernel from a running application");
  cmd->footer(
      "The application runs with libkerncap.so injected (CUDA_INJECTION64_PATH). At the chosen launch kerncap\n"
      "synchronises, saves every tracked allocation and the kernel's module globals (BEFORE), lets the launch run,\n"
      "and saves the bytes it changed (AFTER), the parameters and the code image into OUT/capture.\n"
      "Then it looks for the kernel's source (--source-dir, --compile-commands) and writes a reproducer\n"
      "into OUT: Makefile (run, validate, recompile, run-variant, validate-variant, ncu, sanitize, sass),\n"
      "README.md, compile.json and, when the source is found, kernel_variant.cu with src/.\n"
      "Example: kerncap extract vectorAdd --cmd \"./app --n 1000000\" -o iso/vadd");
  cmd->add_option("kernel", args->kernel, "Substring of the kernel's demangled (or mangled) name")->required();
  cmd->add_option("--cmd", args->cmd, "The application as one shell command line");
  cmd->add_option("-o,--output", args->output, "Output directory (the capture goes to OUT/capture)")->required();
  cmd->add_option("--dispatch", args->dispatch, "Capture the Nth matching launch, counting from 0")->default_val(0);
  cmd->add_flag("--regex", args->regex, "KERNEL is an ECMAScript regular expression");
  cmd->add_flag("--continue", args->keep_running, "Let the application run to completion after the capture");
  cmd->add_flag("--force", args->force, "Replace an existing capture in the output directory");
  cmd->add_flag("-v,--verbose", [args](int64_t n) { args->verbose = 1 + static_cast<int>(n); }, "More output (repeatable)");
  cmd->add_flag("-q,--quiet", args->quiet, "Only errors");
  cmd->add_flag("--json", args->json, "Print the result as JSON on stdout");
  cmd->add_option("--source-dir", args->source_dir,
                  "Source tree the application was built from: find the kernel's definition for the reproducer");
  cmd->add_option("--compile-commands", args->compile_commands,
                  "compile_commands.json of that build (else one is looked for next to --source-dir)");
  cmd->add_option("-D,--define", args->defines, "Macro for the reproducer's recompile, NAME or NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--language", args->language, "Kernel language: auto, cuda (C++ source finder) or triton")
      ->check(CLI::IsMember({"auto", "cuda", "triton"}))
      ->default_val("auto");
  cmd->add_option("app", args->argv, "The application and its arguments (after --)");
  cmd->callback([args, &exit_code] { run_extract(*args, exit_code); });
}

}  // namespace kerncap::cli
