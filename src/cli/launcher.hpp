#pragma once
// Starting the application under kerncap: the injection library is handed to the CUDA
// driver through CUDA_INJECTION64_PATH, its configuration through KERNCAP_* variables.
// Shared by `extract` and `profile`.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kerncap::cli {

// libkerncap.so next to this executable (../lib or the build tree), or $KERNCAP_LIBRARY.
std::filesystem::path find_injection_library();

struct AppExit {
  bool exited = false;  // normal exit (else killed by a signal)
  int code = 0;         // exit code, or signal number
  std::string describe() const;  // "exited with code 3", "killed by signal 11 (Segmentation fault)"
};

// Runs `argv` (or `/bin/sh -c command` when argv has one element and shell=true) with
// `env` added to this process's environment; waits for it.
AppExit run_application(const std::vector<std::string>& argv, bool shell,
                        const std::map<std::string, std::string>& env);

}  // namespace kerncap::cli
