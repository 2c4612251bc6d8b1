#include "cli/commands.hpp"
namespace kerncap::cli {
void add_validate(CLI::App& app, int&) { app.add_subcommand("validate", "(placeholder)"); }
}  // namespace kerncap::cli
