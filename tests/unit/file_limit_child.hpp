#pragma once
// A full disk without root: work run in a forked child whose files may not grow past a limit
// (RLIMIT_FSIZE with SIGXFSZ ignored: writes beyond fail with EFBIG, as a full disk fails with
// ENOSPC). Shared by the disk-full tests of the store, prune and footprint writers.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>

#include "common/error.hpp"

namespace kerncap::testing {

// Runs `work` in a child (files limited to `limit` bytes; 0: no limit); returns, through a pipe
// (which the limit does not bound), "device: <message>" for an Error(Device), "other kind:
// <message>" for another kerncap::Error, "untyped: <what>" for another exception, or "" when
// `work` threw nothing.
inline std::string in_child_with_file_limit(uint64_t limit, const std::function<void()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    if (limit) {
      ::signal(SIGXFSZ, SIG_IGN);
      rlimit lim{limit, limit};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    std::string what;
    try {
      work();
    } catch (const Error& e) {
      what = std::string(e.kind() == ErrorKind::Device ? "device: " : "other kind: ") + e.what();
    } catch (const std::exception& e) {
      what = std::string("untyped: ") + e.what();
    }
    (void)!::write(fds[1], what.data(), what.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string what;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) what.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return what;
}

}  // namespace kerncap::testing
