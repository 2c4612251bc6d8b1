#pragma once
// The step `kerncap extract` runs after a successful capture: find the kernel's source,
// then write the reproducer project. Kept here so the CLI only parses options and prints.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reproducer/generator.hpp"
#include "source/finder.hpp"

namespace kerncap::extract {

namespace fs = std::filesystem;

struct SourceOptions {
  std::optional<fs::path> source_dir;
  std::optional<fs::path> compile_commands;
  std::vector<std::string> defines;
  source::Language language = source::Language::Auto;
};

// Before the application runs: the directories and files exist, the database parses,
// the defines are well formed. Throws Error(Usage/Input).
void check_source_options(const SourceOptions& o);

source::Language language_from_string(const std::string& s);  // auto | cuda | triton

struct Outcome {
  source::Result found;
  reproducer::Generated generated;
};

// `out` holds a complete capture. `kerncap` is the binary the Makefile will call.
Outcome make_reproducer(const fs::path& out, const SourceOptions& o, const fs::path& kerncap);

// Terminal lines ("  source: found ...", "  reproducer: ...") and the --json object.
std::vector<std::string> describe(const Outcome& r, const fs::path& out);
nlohmann::json to_json(const Outcome& r, const fs::path& out);

}  // namespace kerncap::extract
