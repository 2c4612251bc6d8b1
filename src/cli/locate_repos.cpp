#include "cli/locate_repos.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::cli {

std::vector<source::RepoIndex> index_repos(const std::vector<std::string>& dirs, bool quiet) {
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(d, ec)) usage_error(fmt::format("--source-repo {}: not a directory", d));
  }
  std::vector<source::RepoIndex> out;
  const bool tty = isatty(STDERR_FILENO);
  for (const auto& d : dirs) {
    bool shown = false;
    auto progress = [&](size_t done, size_t total) {
      if (quiet) return;
      shown = true;
      std::fprintf(stderr, "%skerncap: indexing %s: %zu/%zu files%s", tty ? "\r" : "", d.c_str(), done, total,
                   tty ? "" : "\n");
      std::fflush(stderr);
    };
    out.push_back(source::build_index(d, progress));
    if (shown && tty) std::fprintf(stderr, "\n");
  }
  return out;
}

}  // namespace kerncap::cli
