// `kerncap mcp`: serve kerncap's commands to an AI agent over the Model Context Protocol (stdio).
// The server is Python (python/kerncap/mcp_server.py, on the official `mcp` SDK) and runs this
// same executable for every tool call; this command only finds the interpreter and the package
// and replaces itself with `python3 -m kerncap.mcp_server`, so an agent's configuration can
// name `kerncap mcp` whatever Python environment it has.
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

void set_env(const std::string& name, const std::string& value) { ::setenv(name.c_str(), value.c_str(), 1); }

[[noreturn]] void run_mcp(const std::string& python_flag) {
  const extract::HostEnv h = extract::read_host_env();
  const std::string python = !python_flag.empty() ? python_flag : h.python.value_or("python3");
  // Every tool call runs this kerncap, not whichever one PATH would find first.
  const std::string bin_var(format::env_name(format::Var::Bin));
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !std::getenv(bin_var.c_str())) set_env(bin_var, self.string());
  // The package that belongs to this kerncap (installed beside it, or the source tree), after
  // the user's own PYTHONPATH: when the package folder is site-packages, putting it first would
  // hide every module the user placed ahead of site-packages on purpose.
  const fs::path pkg = extract::python_dir(h);
  if (fs::exists(pkg / "kerncap" / "mcp_server.py", ec))
    set_env("PYTHONPATH", (h.pythonpath && !h.pythonpath->empty() ? *h.pythonpath + ":" : "") + pkg.string());
  std::vector<std::string> args = {python, "-m", "kerncap.mcp_server"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(python.c_str(), argv.data());
  usage_error(fmt::format("cannot run {}: {}. `kerncap mcp` needs Python 3 with the `mcp` package (pip install "
                          "mcp); name the interpreter with --python or {}",
                          python, std::strerror(errno), format::env_name(format::Var::Python)));
}

}  // namespace

void add_mcp(CLI::App& app, int& exit_code) {
  auto python = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("mcp", "Serve kerncap to an AI agent: an MCP server on stdin/stdout");
  cmd->footer(
      "Runs `python3 -m kerncap.mcp_server` (the official `mcp` Python SDK; pip install mcp) speaking the Model\n"
      "Context Protocol over stdio. Tools: profile, extract, info, replay, validate (strong, fuzz), lint, diff,\n"
      "locate; each runs this kerncap with --json and returns its fields and the 'Result:' line. Exits 2 when\n"
      "Python or the mcp package is missing. Configure an agent with the command `kerncap mcp`.\n"
      "See docs/agents.md.");
  cmd->add_option("--python", *python, "Python interpreter with the mcp package (default: $KERNCAP_PYTHON, else python3)");
  cmd->callback([python, &exit_code] {
    exit_code = 0;
    run_mcp(*python);
  });
}

}  // namespace kerncap::cli
