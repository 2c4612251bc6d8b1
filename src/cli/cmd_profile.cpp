// `kerncap profile`: placeholder until the profiler lands.
#include "cli/commands.hpp"
#include "common/error.hpp"

namespace kerncap::cli {
void add_profile(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("profile", "Rank the application's kernels by GPU time (not implemented yet)");
  cmd->callback([&exit_code] {
    exit_code = 2;
    usage_error("profile is not implemented yet");
  });
}
}  // namespace kerncap::cli
