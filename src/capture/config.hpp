#pragma once
// The injected library's whole configuration, read from KERNCAP_* environment variables
// here and nowhere else. `kerncap extract/profile` set them; `kerncap env` prints this
// table so the docs cannot drift from the code.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::capture {

enum class Mode { Off, Capture, Profile };

struct Config {
  Mode mode = Mode::Off;
  std::string output;          // KERNCAP_OUTPUT: directory the launcher created
  std::string kernel;          // KERNCAP_KERNEL: substring (or regex) of the kernel name
  bool regex = false;          // KERNCAP_REGEX=1: `kernel` is an ECMAScript regex
  uint64_t dispatch = 0;       // KERNCAP_DISPATCH: which matching launch (0 = first)
  bool keep_running = false;   // KERNCAP_CONTINUE=1: let the application go on after capture
  int verbose = 0;             // KERNCAP_VERBOSE: 0 quiet, 1 progress, 2 debug
  uint32_t chunk_bytes = 4096; // KERNCAP_CHUNK_BYTES: change-detection granularity
  uint64_t staging_bytes = 64ull << 20;  // KERNCAP_STAGING_BYTES: pinned staging buffer
  bool dump_images = false;    // KERNCAP_DUMP_IMAGES=1: save every loaded code image (debugging)

  nlohmann::json to_json() const;
};

struct EnvVar {
  const char* name;
  const char* meaning;
};
// Every variable the library reads, with its meaning (for `kerncap env` and docs).
const std::vector<EnvVar>& env_vars();

// Reads the environment. Never throws: malformed values fall back to defaults and are
// reported in `problems`.
Config read_config(std::vector<std::string>* problems = nullptr);

}  // namespace kerncap::capture
