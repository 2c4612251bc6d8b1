#include "cli/commands.hpp"
namespace kerncap::cli {
void add_replay(CLI::App& app, int&) { app.add_subcommand("replay", "(placeholder)"); }
}  // namespace kerncap::cli
