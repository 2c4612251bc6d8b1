#include "extract/profile_run.hpp"

#include <stdlib.h>

#include <cctype>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "extract/diagnose.hpp"
#include "extract/environment.hpp"
#include "extract/triton_step.hpp"
#include "format/events.hpp"
#include "format/out_layout.hpp"
#include "names/demangle.hpp"
#include "names/regex_search.hpp"

namespace kerncap::extract {

RecordsDir::RecordsDir(const std::string& keep) {
  if (!keep.empty()) {
    path_ = fs::absolute(keep);
    if (fs::exists(path_) && (!fs::is_directory(path_) || !fs::is_empty(path_)))
      usage_error(fmt::format("--records {} exists and is not an empty directory; choose a new one", keep));
    files::create_private_dirs(path_);
    return;
  }
  std::string tmpl = (fs::temp_directory_path() / "kerncap-profile-XXXXXX").string();
  if (!mkdtemp(tmpl.data()))
    usage_error(fmt::format("cannot create a temporary directory under {}: set TMPDIR to a writable place",
                            fs::temp_directory_path().string()));
  path_ = tmpl;
  temporary_ = true;
}

RecordsDir::~RecordsDir() {
  std::error_code ec;
  if (temporary_) fs::remove_all(path_, ec);
}

std::vector<std::string> AppCommand::as_argv() const {
  return cmd.empty() ? argv : std::vector<std::string>{"/bin/sh", "-c", cmd};
}

AppExit run_profiled(const AppCommand& app, const fs::path& records, int verbose, uint32_t sample) {
  ProfiledRun how;
  how.verbose = verbose;
  how.sample = sample;
  return run_profiled(app, records, how);
}

AppExit run_profiled(const AppCommand& app, const fs::path& records, const ProfiledRun& how) {
  const HostEnv host = read_host_env();
  refuse_other_tool(host, how.doing);
  const fs::path lib = find_injection_library(host.library);
  format::Config c;
  c.mode = format::Mode::Profile;
  c.output = records.string();
  c.verbose = how.verbose;
  c.profile_sample = how.sample;
  c.swaps = how.swaps;
  c.profile_params = how.params;
  c.rank = how.rank;
  std::map<std::string, std::string> env = app_environment(c, lib);
  // The Triton shim tells the library which launches are benchmarks (kerncap_ignore_begin/end),
  // so the profile shows them apart and its dispatch indices are extract's.
  add_triton_shim(env, records, host);
  AppExit exit = app.cmd.empty() ? run_application(app.argv, false, env, how.output)
                                 : run_application({app.cmd}, true, env, how.output);
  check_protocol(format::events::read_dir(format::out::state_dir(records)), lib);
  return exit;
}

profile::RunInfo run_info(const AppCommand& app, const AppExit& exit) {
  profile::RunInfo run;
  run.ran = true;
  run.command = app.as_argv();
  run.exited = exit.exited;
  run.code = exit.code;
  run.description = exit.describe();
  return run;
}

int app_status(const AppExit& app) { return app.exited ? app.code : 128 + app.code; }

std::string explain_empty(const std::vector<format::ProcessRecords>& records, const AppExit* app) {
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

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

// A directory name for a kernel's capture: the last name component, identifier chars only.
std::string capture_dir_name(const profile::KernelStats& k) {
  std::string f = names::function_name(k.demangled);
  if (size_t p = f.rfind("::"); p != std::string::npos) f = f.substr(p + 2);
  std::string out;
  for (char c : f)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') out += c;
  return out.empty() ? "kernel" : out.substr(0, 40);
}

}  // namespace

std::string next_step(const profile::Summary& s, const AppCommand& a, const std::regex* filter) {
  for (const auto& k : s.kernels) {
    if (filter && !names::regex_search_text(k.mangled, *filter) && !names::regex_search_text(k.demangled, *filter))
      continue;
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
                         where, shell_quote(k.mangled), p.dispatch.front(), capture_dir_name(k), app);
    }
    return "The top kernel ran only from device-side graph launches, which `extract --dispatch` cannot target.\n";
  }
  return "";
}

}  // namespace kerncap::extract
