// `kerncap prune OUT`: drop the BEFORE bytes the captured launch never touches, using the
// capture's footprint (format/prune.hpp). Replay fills the dropped ranges with 0xCB.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "storage/prune.hpp"
#include "format/window.hpp"

namespace kerncap::cli {

void add_prune(CLI::App& app, int& exit_code) {
  auto dir = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "prune", "Drop the stored bytes the captured launch never touches (needs `kerncap footprint OUT` first)");
  cmd->footer(
      "The capture's footprint says which bytes the launch reads or writes; every other byte of every region is\n"
      "dropped from the capture and recorded as pruned. Replay fills pruned bytes with 0xCB, so a read the\n"
      "footprint missed makes validation FAIL, never pass. Chunks no longer referenced are deleted from\n"
      "OUT/capture/chunks (never from a shared store). Validate after pruning.");
  cmd->add_option("dir", *dir, "Reproducer directory (OUT) or its capture/ folder")->required();
  cmd->add_flag("--dry-run", *dry_run, "Print what would be dropped; change nothing");
  add_store_option(cmd);
  cmd->callback([dir, dry_run, &exit_code] {
    format::refuse_window_capture(*dir, "kerncap prune",
                                  "A window's operations together read more than one launch's footprint: it is "
                                  "not pruned.");
    const format::PruneResult r = format::prune_capture(*dir, *dry_run);
    std::cout << r.summary;
    exit_code = 0;
  });
}

}  // namespace kerncap::cli
