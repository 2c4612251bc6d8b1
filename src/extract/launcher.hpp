#pragma once
// Starting the application under kerncap: the injection library is handed to the CUDA
// driver through CUDA_INJECTION64_PATH, its configuration through the protocol's variables
// (environment.hpp). Shared by `extract` and `profile`.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kerncap::extract {

// The library the user named (HostEnv::library), else libkerncap.so next to this
// executable (../lib or the build tree). Throws Error(Usage) saying what to set.
std::filesystem::path find_injection_library(const std::optional<std::string>& named);

struct AppExit {
  bool exited = false;  // normal exit (else killed by a signal)
  int code = 0;         // exit code, or signal number
  std::string describe() const;  // "exited with code 3", "killed by signal 11 (Segmentation fault)"
};

// Runs `argv` (or `/bin/sh -c command` when argv has one element and shell=true) with
// `env` added to this process's environment; waits for it.
AppExit run_application(const std::vector<std::string>& argv, bool shell,
                        const std::map<std::string, std::string>& env);

}  // namespace kerncap::extract
