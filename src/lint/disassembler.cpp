// Starting the toolkit's disassembler on a temporary copy of the cubin. The exec error is
// sent back through a close-on-exec pipe, so "not installed" reads apart from "failed".
#include "lint/disassembler.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::lint {

namespace {

namespace fs = std::filesystem;

// Reads both pipes until both close (poll, so a chatty stderr cannot block stdout).
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* dst[2] = {&out, &err};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        dst[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

class TempFile {
 public:
  explicit TempFile(std::span<const uint8_t> bytes) {
    std::string tmpl = (fs::temp_directory_path() / "kerncap-lint-XXXXXX.cubin").string();
    const int fd = ::mkstemps(tmpl.data(), 6);
    if (fd < 0) fail(ErrorKind::Internal, fmt::format("cannot create a temporary file in {}: {}",
                                                      fs::temp_directory_path().string(), std::strerror(errno)));
    path_ = tmpl;
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fd);
        fail(ErrorKind::Internal, fmt::format("cannot write {}: {}", path_, std::strerror(errno)));
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::optional<ToolRun> run_tool(const std::vector<std::string>& argv) {
  int out[2], err[2], status_pipe[2];
  if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(status_pipe, O_CLOEXEC))
    fail(ErrorKind::Internal, fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) fail(ErrorKind::Internal, fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execvp(cargv[0], cargv.data());
    const int e = errno;
    [[maybe_unused]] const ssize_t w = ::write(status_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::close(status_pipe[1]);
  int exec_errno = 0;
  const ssize_t got = ::read(status_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(status_pipe[0]);
  ToolRun r;
  drain(out[0], err[0], r.out, r.err);
  int ws = 0;
  while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  if (got == static_cast<ssize_t>(sizeof exec_errno)) return std::nullopt;
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  return r;
}

Disassembly disassemble(std::span<const uint8_t> cubin, const std::string& tool) {
  const TempFile file(cubin);
  // nvdisasm -c: code sections only; cuobjdump -sass prints the same instructions under
  // "Function : NAME" headers. Both forms are read by parse_sass.
  std::vector<std::vector<std::string>> tries;
  auto add = [&](const std::string& prog) {
    const bool cuobjdump = fs::path(prog).filename().string().find("cuobjdump") != std::string::npos;
    tries.push_back(cuobjdump ? std::vector<std::string>{prog, "-sass", file.path()}
                              : std::vector<std::string>{prog, "-c", file.path()});
  };
  if (!tool.empty()) {
    add(tool);
  } else {
    // Beside kerncap first (the build copies install-deps' wheels there), then PATH, the toolkit.
    std::error_code ec;
    const fs::path here = fs::read_symlink("/proc/self/exe", ec).parent_path();
    if (!ec && fs::exists(here / "nvdisasm", ec)) add((here / "nvdisasm").string());
    for (const char* p : {"nvdisasm", "/usr/local/cuda/bin/nvdisasm", "cuobjdump", "/usr/local/cuda/bin/cuobjdump"})
      add(p);
  }
  for (const auto& argv : tries) {
    const std::optional<ToolRun> r = run_tool(argv);
    if (!r) continue;
    // cuobjdump -sass runs nvdisasm itself: without it, it is no disassembler either.
    if (r->status != 0 && r->err.find("'nvdisasm'") != std::string::npos) continue;
    if (r->status != 0)
      input_error(fmt::format("{} could not disassemble the cubin (exit {}): {}", argv[0], r->status, r->err));
    return {argv[0], r->out};
  }
  if (!tool.empty()) usage_error(fmt::format("cannot run the disassembler {}", tool));
  usage_error(
      "no SASS disassembler: nvdisasm was found neither on PATH nor in /usr/local/cuda/bin (cuobjdump -sass needs it "
      "too). "
      "Install the CUDA toolkit's nvdisasm (the toolkit, or `pip install nvidia-cuda-nvdisasm`), name one with "
      "--disassembler PATH, or pass --no-sass to check resources and occupancy only");
}

}  // namespace kerncap::lint
