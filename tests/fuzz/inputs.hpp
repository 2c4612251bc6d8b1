#pragma once
// The fuzz targets for what a user hands in besides a capture (issue 38, item 4): OUT's
// kerncap.toml and compare.json ("outfiles"), `kerncap locate --rules` files ("locate"),
// `extract --top N --from profile.json` ("profile") and the serve protocol's messages
// ("serve"). Each must end accepted or refused with a typed error: never a crash, a hang, a
// block on a FIFO or a file touched outside the work directory.
#include <string>
#include <vector>

#include "targets.hpp"

namespace kerncap::fuzz {

// The seed texts of these targets (valid documents of each kind).
struct TextSeeds {
  std::vector<std::string> tomls, compare_specs, locate_rules, profiles, serve_lines;
};
const TextSeeds& text_seeds();

// Appends the targets above to `out`.
void add_input_targets(std::vector<Target>& out);

}  // namespace kerncap::fuzz
