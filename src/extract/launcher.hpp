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
  int forwarded = 0;    // a signal kerncap received while waiting and passed on to the application
  std::string describe() const;  // "exited with code 3", "killed by signal 11 (Segmentation fault)"
};

// Where the application's output goes instead of ours (`kerncap run` keeps each run's to
// compare them): files created (truncated) before it starts; an empty path keeps ours.
struct AppOutput {
  std::filesystem::path stdout_file, stderr_file;
};

// Runs `argv` (or `/bin/sh -c command` when argv has one element and shell=true) with
// `env` added to this process's environment; waits for it.
// The application never outlives kerncap (issue 38's fault matrix): SIGTERM and SIGHUP sent to
// kerncap, and SIGINT or SIGQUIT sent to it by another process (`kill -INT`, a job runner;
// a terminal's Ctrl-C reaches the application by itself), are passed on to the application,
// and kerncap goes on to report what it left; a kerncap killed outright (SIGKILL) takes the
// application and everything it started with it: a guard process between kerncap and the
// application (its parent, a child subreaper, told of kerncap's death by PR_SET_PDEATHSIG) kills
// that whole tree, and otherwise ends as the application ended, so the status is the
// application's. A signal ignored when kerncap started (nohup) stays ignored.
AppExit run_application(const std::vector<std::string>& argv, bool shell,
                        const std::map<std::string, std::string>& env, const AppOutput* output = nullptr);

}  // namespace kerncap::extract
