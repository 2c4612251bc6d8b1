#pragma once
// compile_commands.json (the JSON compilation database CMake, Bear and others write):
// one entry per translation unit with its directory, file, arguments and output.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kerncap::source {

namespace fs = std::filesystem;

struct CompileCommand {
  fs::path directory;
  fs::path file;                   // absolute, normalised
  std::vector<std::string> argv;   // argv[0] is the compiler (or a launcher such as ccache)
  std::optional<fs::path> output;  // the object file: "output", else -o, made absolute
};

struct CompileDb {
  fs::path path;
  std::vector<CompileCommand> entries;
  // Entries compiling `file` (compared after resolving symlinks).
  std::vector<const CompileCommand*> for_file(const fs::path& file) const;
};

// Throws Error(Input) naming the file and the entry when the JSON is malformed.
CompileDb load_compile_db(const fs::path& path);

// compile_commands.json next to or below the source tree: DIR, DIR/build*/, and the same
// in up to two parent directories. Empty when none.
std::vector<fs::path> find_compile_dbs(const fs::path& source_dir);

// weakly_canonical, never throwing (falls back to the lexically normal absolute path).
fs::path canonical_or_self(const fs::path& p);

}  // namespace kerncap::source
