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

// Shared by the targets of the files beside captures (sets.cpp, window_files.cpp):
// a JSON text mutated as a tree, as text (duplicated keys, NUL bytes, deep nesting) or as
// bytes; and, one time in six, the file at `p` made something else (a link out of the work
// directory to the sentinel's secret or FIFO or to /dev/zero, a FIFO, a directory, a huge
// sparse file).
std::string mutate_json_text(std::string text, Rng& rng);
void maybe_replace_file(const fs::path& p, const fs::path& sentinel, Rng& rng);
void spill_text(const fs::path& p, const std::string& text);

// Issue 38's new kinds of input beside captures: a regime set's regimes.json and a set of
// sets' regime-kernels.json with the directories they name ("regimes", "regime-kernels",
// sets.cpp); a window capture's window_liveout.json and `kerncap window validate --replace
// FROM..TO=launches.json` ("liveout", "replace", window_files.cpp); the profile record files
// with their parameter signature ("p") lines ("records", inputs.cpp).
void add_set_targets(std::vector<Target>& out);
void add_window_file_targets(std::vector<Target>& out);

}  // namespace kerncap::fuzz
