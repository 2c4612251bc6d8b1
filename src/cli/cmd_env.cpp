#include "cli/commands.hpp"
namespace kerncap::cli {
void add_env(CLI::App& app, int&) { app.add_subcommand("env", "(placeholder)"); }
}  // namespace kerncap::cli
