#pragma once
// The Unix-domain socket `kerncap serve` listens on: a Linux abstract name (nothing is
// written into the capture directory, which may be read-only or shared, and no path length
// limit applies), derived from the user and the capture directory's canonical path. An
// abstract name carries no permissions, so both ends check the other's uid (SO_PEERCRED).
// Every failing system call becomes a kerncap::Error naming the call and errno.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace kerncap::serve {

// The directory that names a server: OUT for both `OUT` and `OUT/capture`, canonical
// (symlinks, "..", relative paths resolved). Error(Usage) when it does not exist.
std::filesystem::path server_dir(const std::filesystem::path& dir);
// "kerncap-serve-<uid>-<xxh64 of the path, 16 hex digits>" (the abstract name, without its NUL).
std::string socket_name(const std::filesystem::path& canonical_dir, uid_t uid);

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
};

// Binds and listens on the abstract `name`. Error(Usage) when another process holds it
// (a server for that directory is running).
Fd listen_on(const std::string& name);
// Waits up to `timeout` for a connection; an empty Fd when none came (or a signal woke it).
Fd accept_one(const Fd& listener, std::chrono::milliseconds timeout);
// Connects to the abstract `name` (a non-blocking socket); an empty Fd when nothing listens
// there. Other failures (a full backlog) are Error(Input) with the reason (the caller falls back).
Fd connect_to(const std::string& name);
// Who is at the other end of a connected socket.
Peer peer_of(const Fd& fd);

// One line (up to and without '\n'), at most `max` bytes with the newline. Throws
// IoError on a timeout (the whole line must come within `timeout`; negative: no limit),
// an oversize line, or an end of stream before the newline.
class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
std::string read_line(const Fd& fd, size_t max, std::chrono::milliseconds timeout);
// Writes `line` and '\n' (no SIGPIPE: a closed peer is an IoError).
void write_line(const Fd& fd, const std::string& line, std::chrono::milliseconds timeout);

}  // namespace kerncap::serve
