#pragma once
// The CLI tests' way to run a command line: its stdout and stderr together, and its exit
// status (-1 when it could not start or did not exit normally).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace kerncap::test {

struct CliRun {
  int code = -1;
  std::string out;
};

inline CliRun run_shell(const std::string& line) {
  CliRun r;
  FILE* p = popen((line + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace kerncap::test
