#include "cli/strong.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"
#include "footprint/footprint.hpp"
#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"

extern char** environ;

namespace kerncap::cli {
namespace fs = std::filesystem;

FootprintUse footprint_use_from(const std::string& s) {
  if (s == "auto") return FootprintUse::Auto;
  if (s == "never") return FootprintUse::Never;
  if (s == "require") return FootprintUse::Require;
  usage_error(fmt::format("--footprint {}: expected auto, never or require", s));
}

namespace {

// `kerncap footprint DIR --quiet --no-timing` as a child; its exit code (or -1).
int measure_in_child(const std::string& dir) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return -1;
  std::vector<std::string> args = {self.string(), "footprint", dir, "--quiet", "--no-timing"};
  // The shared chunk store this process was given (--store): the child reads BEFORE from it
  // too (else it found no chunks and the validation stayed weak).
  if (const auto store = format::default_store()) {
    args.push_back("--store");
    args.push_back(store->string());
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);  // the table; errors go to stderr
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::optional<format::Footprint> footprint_for(const std::string& dir, FootprintUse use, bool quiet) {
  if (use == FootprintUse::Never) return std::nullopt;
  return footprint_for(format::open_capture(dir), dir, use, quiet);
}

std::optional<format::Footprint> footprint_for(const format::Capture& cap, const std::string& dir, FootprintUse use,
                                               bool quiet) {
  if (use == FootprintUse::Never) return std::nullopt;
  if (auto f = footprint::load_or_none(cap)) return f;
  auto weak = [&](const std::string& why) -> std::optional<format::Footprint> {
    if (use == FootprintUse::Require) input_error(why + "; strong validation was required (--footprint require)");
    if (!quiet) std::fprintf(stderr, "kerncap: %s; this validation is weak (no footprint)\n", why.c_str());
    return std::nullopt;
  };
  if (use == FootprintUse::Auto && !footprint::built_with_sanitizer())
    return weak("this kerncap was built without the Compute Sanitizer API, so it cannot measure a footprint");
  if (!quiet)
    std::fprintf(stderr, "kerncap: measuring the launch's footprint once for strong validation (kerncap footprint %s) "
                         "...\n", dir.c_str());
  const int rc = measure_in_child(dir);
  if (rc != 0) return weak(fmt::format("`kerncap footprint {}` failed (exit {}; run it to see why)", dir, rc));
  if (auto f = footprint::load_or_none(cap)) return f;
  return weak("`kerncap footprint` wrote no footprint");
}

}  // namespace kerncap::cli
