// `kerncap mcp`: serve kerncap's commands to an AI agent over the Model Context Protocol (stdio).
// The server is Python (python/kerncap/mcp_server.py, on the official `mcp` SDK) and runs this
// same executable for every tool call; this command only finds the interpreter and the package
// and replaces itself with `python3 -m kerncap.mcp_server`, so an agent's configuration can
// name `kerncap mcp` whatever Python environment it has.
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/python_module.hpp"

namespace kerncap::cli {

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
    exec_python_module({"kerncap.mcp_server", {}, *python, "the mcp package (pip install mcp)"});
  });
}

}  // namespace kerncap::cli
