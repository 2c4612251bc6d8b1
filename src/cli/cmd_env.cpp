// `kerncap env`: the KERNCAP_* variables the injected library reads (generated from the
// one table in src/capture/config.cpp, so this list cannot drift from the code).
#include <iostream>

#include <fmt/format.h>

#include "capture/config.hpp"
#include "cli/commands.hpp"

namespace kerncap::cli {

void add_env(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("env", "List the KERNCAP_* environment variables of the capture library");
  cmd->callback([&exit_code] {
    for (const auto& v : capture::env_vars()) std::cout << fmt::format("{:<24} {}\n", v.name, v.meaning);
    exit_code = 0;
  });
}

}  // namespace kerncap::cli
