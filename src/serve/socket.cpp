#include "serve/socket.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <xxhash.h>

#include "common/error.hpp"
#include "format/capture_dir.hpp"

namespace kerncap::serve {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Connections waiting while the server evaluates (it answers one at a time).
constexpr int kBacklog = 16;

std::string errno_text(const char* call) { return fmt::format("{}: {}", call, std::strerror(errno)); }

// The abstract address of `name`: sun_path starts with a NUL, the length counts the name only.
socklen_t abstract_address(const std::string& name, sockaddr_un& a) {
  std::memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof a.sun_path) usage_error(fmt::format("socket name {} is too long", name));
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

Fd new_socket(int flags = 0) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
  if (!fd) input_error(errno_text("socket(AF_UNIX)"));
  return fd;
}

// Milliseconds left until `deadline` (-1: none), for poll.
int left_ms(std::optional<Clock::time_point> deadline) {
  if (!deadline) return -1;
  const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return d <= 0 ? 0 : static_cast<int>(std::min<int64_t>(d, 1 << 30));
}

std::optional<Clock::time_point> deadline_of(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) return std::nullopt;
  return Clock::now() + timeout;
}

// Waits for `events` on fd until the deadline; false on timeout. EINTR retries.
bool wait_for(int fd, short events, std::optional<Clock::time_point> deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, left_ms(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) throw IoError(errno_text("poll"));
  }
}

}  // namespace

fs::path server_dir(const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::canonical(dir, ec);
  if (ec) usage_error(fmt::format("{}: {}", dir.string(), ec.message()));
  if (p.filename() == format::kCaptureDirName && fs::is_regular_file(p / format::kManifestName, ec)) p = p.parent_path();
  return p;
}

std::string socket_name(const fs::path& canonical_dir, uid_t uid) {
  const std::string& s = canonical_dir.native();
  return fmt::format("kerncap-serve-{}-{:016x}", uid, XXH64(s.data(), s.size(), 0));
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd listen_on(const std::string& name) {
  Fd fd = new_socket();
  sockaddr_un a;
  const socklen_t len = abstract_address(name, a);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0) {
    if (errno == EADDRINUSE)
      usage_error(fmt::format("another process already serves this directory (socket @{})", name));
    input_error(errno_text("bind"));
  }
  if (::listen(fd.get(), kBacklog) != 0) input_error(errno_text("listen"));
  return fd;
}

Fd accept_one(const Fd& listener, std::chrono::milliseconds timeout) {
  pollfd p{listener.get(), POLLIN, 0};
  const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (n < 0 && errno == EINTR) return Fd();
  if (n < 0) input_error(errno_text("poll"));
  if (n == 0) return Fd();
  Fd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!c) {
    // The client gave up between poll and accept, or a signal came: nothing to serve.
    if (errno == EAGAIN || errno == ECONNABORTED || errno == EINTR || errno == EPROTO) return Fd();
    input_error(errno_text("accept"));
  }
  return c;
}

Fd connect_to(const std::string& name) {
  // Non-blocking: a connect to a server whose backlog is full fails at once instead of
  // waiting for it (reads and writes wait in poll, with their timeouts).
  Fd fd = new_socket(SOCK_NONBLOCK);
  sockaddr_un a;
  const socklen_t len = abstract_address(name, a);
  while (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0) {
    if (errno == EINTR) continue;
    if (errno == ECONNREFUSED || errno == ENOENT) return Fd();  // nothing listens
    if (errno == EAGAIN) input_error(fmt::format("the server on @{} has {} connections waiting already", name, kBacklog));
    input_error(errno_text("connect"));
  }
  return fd;
}

Peer peer_of(const Fd& fd) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &c, &len) != 0) input_error(errno_text("getsockopt(SO_PEERCRED)"));
  return {c.pid, c.uid};
}

std::string read_line(const Fd& fd, size_t max, std::chrono::milliseconds timeout) {
  const auto deadline = deadline_of(timeout);
  std::string line;
  char buf[4096];
  while (true) {
    if (!wait_for(fd.get(), POLLIN, deadline))
      throw IoError(fmt::format("no complete line within {} ms", timeout.count()));
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw IoError(errno_text("recv"));
    }
    if (n == 0) throw IoError(line.empty() ? "the other end closed the connection" : "the line ended early");
    const char* nl = static_cast<const char*>(std::memchr(buf, '\n', static_cast<size_t>(n)));
    const size_t take = nl ? static_cast<size_t>(nl - buf) : static_cast<size_t>(n);
    if (line.size() + take + (nl ? 1 : 0) > max) throw IoError(fmt::format("a line longer than {} bytes", max));
    line.append(buf, take);
    if (nl) return line;  // one request per connection: what follows the newline is ignored
  }
}

void write_line(const Fd& fd, const std::string& line, std::chrono::milliseconds timeout) {
  const auto deadline = deadline_of(timeout);
  const std::string data = line + '\n';
  size_t off = 0;
  while (off < data.size()) {
    if (!wait_for(fd.get(), POLLOUT, deadline))
      throw IoError(fmt::format("the other end read nothing for {} ms", timeout.count()));
    const ssize_t n = ::send(fd.get(), data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw IoError(errno_text("send"));
    }
    off += static_cast<size_t>(n);
  }
}

}  // namespace kerncap::serve
