#include "cli/commands.hpp"
namespace kerncap::cli {
void add_info(CLI::App& app, int&) { app.add_subcommand("info", "(placeholder)"); }
}  // namespace kerncap::cli
