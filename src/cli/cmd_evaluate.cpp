// `kerncap evaluate OUT --images FILE_OR_DIR...`: many candidate images of one capture judged on
// every GPU of this host, JSON lines on stdout. The work pool is Python (python/kerncap/
// evaluate_pool.py: a worker process per GPU, each with one engine Session, the one judge); this
// command only finds the interpreter and the package and replaces itself with
// `python3 -m kerncap.evaluate_cli ARGS` (python_module.hpp). Every argument, --help included,
// goes to that module, so the help it prints is the parser's own.
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/python_module.hpp"

namespace kerncap::cli {

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
    // The workers' judge (and a Session's serve child) use this kerncap (python_module.hpp).
    exec_python_module({"kerncap.evaluate_cli", cmd->remaining(), "", ""});
  });
}

}  // namespace kerncap::cli
