// `kerncap evaluate OUT --images FILE_OR_DIR...`: many candidate images of one capture judged on
// every GPU of this host, JSON lines on stdout. The work pool is Python (python/kerncap/
// evaluate_pool.py: a worker process per GPU, each with one engine Session, the one judge); this
// command only finds the interpreter and the package and replaces itself with
// `python3 -m kerncap.evaluate_cli ARGS`, as `kerncap mcp` does. Every argument, --help included,
// goes to that module, so the help it prints is the parser's own.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "common/error.hpp"
#include "extract/environment.hpp"
#include "extract/triton_step.hpp"
#include "format/protocol.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void run_evaluate(const std::vector<std::string>& rest) {
  const extract::HostEnv h = extract::read_host_env();
  const std::string python = h.python.value_or("python3");
  // The workers' judge (and a Session's serve child) use this kerncap, not another on PATH.
  const std::string bin_var(format::env_name(format::Var::Bin));
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !std::getenv(bin_var.c_str())) ::setenv(bin_var.c_str(), self.string().c_str(), 1);
  // The package that belongs to this kerncap, after the user's own PYTHONPATH (see cmd_mcp.cpp).
  const fs::path pkg = extract::python_dir(h);
  if (fs::exists(pkg / "kerncap" / "evaluate_cli.py", ec)) {
    const std::string path = (h.pythonpath && !h.pythonpath->empty() ? *h.pythonpath + ":" : "") + pkg.string();
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  std::vector<std::string> args = {python, "-m", "kerncap.evaluate_cli"};
  args.insert(args.end(), rest.begin(), rest.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(python.c_str(), argv.data());
  usage_error(fmt::format("cannot run {}: {}. `kerncap evaluate` needs Python 3; name the interpreter with {}",
                          python, std::strerror(errno), format::env_name(format::Var::Python)));
}

}  // namespace

void add_evaluate(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "evaluate", "Judge many candidate images of one capture on every GPU of this host (JSON lines)");
  // Everything after `evaluate` belongs to python -m kerncap.evaluate_cli, whose --help is the truth.
  cmd->set_help_flag();
  cmd->allow_extras();
  cmd->prefix_command();
  cmd->footer("Options: kerncap evaluate --help (python3 -m kerncap.evaluate_cli; docs/evaluate.md).");
  cmd->callback([cmd, &exit_code] {
    exit_code = 0;
    run_evaluate(cmd->remaining());
  });
}

}  // namespace kerncap::cli
