// `kerncap env`: the KERNCAP_* variables, printed from the one table in
// src/format/protocol.cpp (so this list, and docs/env.md made from --markdown, cannot
// drift from the code).
#include <iostream>

#include "cli/commands.hpp"
#include "format/protocol.hpp"

namespace kerncap::cli {

void add_env(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("env", "List the environment variables of kerncap and its capture library");
  cmd->footer("--markdown writes docs/env.md: kerncap env --markdown > docs/env.md");
  auto json = std::make_shared<bool>(false);
  auto markdown = std::make_shared<bool>(false);
  auto* j = cmd->add_flag("--json", *json, "Print the table as JSON (protocol version and every variable)");
  cmd->add_flag("--markdown", *markdown, "Print the table as the Markdown page docs/env.md")->excludes(j);
  cmd->callback([json, markdown, &exit_code] {
    if (*json) std::cout << format::env_json().dump(1) << '\n';
    else if (*markdown) std::cout << format::env_markdown();
    else std::cout << format::env_text();
    exit_code = 0;
  });
}

}  // namespace kerncap::cli
