#include "cli/commands.hpp"
namespace kerncap::cli {
void add_extract(CLI::App& app, int&) { app.add_subcommand("extract", "(placeholder)"); }
}  // namespace kerncap::cli
