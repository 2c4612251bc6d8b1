#include "extract/launcher.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/protocol.hpp"

extern char** environ;

namespace kerncap::extract {
namespace fs = std::filesystem;

fs::path find_injection_library(const std::optional<std::string>& named) {
  const auto var = format::env_name(format::Var::Library);
  if (named) {
    if (!fs::exists(*named)) usage_error(fmt::format("{}={} does not exist", var, *named));
    return fs::absolute(*named);
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path dir = exe.parent_path();
  for (fs::path cand : {dir / "../lib/libkerncap.so", dir / "libkerncap.so"}) {
    if (!fs::exists(cand)) continue;
    // The library finds CUPTI beside itself (RPATH $ORIGIN) or on the loader's path;
    // without it the driver would silently run the application without kerncap.
    if (!fs::exists(cand.parent_path() / "libcupti.so.13")) {
      void* h = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_LOCAL);
      if (!h)
        fail(ErrorKind::Usage, fmt::format("CUPTI (libcupti.so.13) was found neither beside {} nor on the library "
                                           "path; copy it there from the CUDA toolkit (lib64/ or extras/CUPTI/lib64) "
                                           "or add its folder to LD_LIBRARY_PATH",
                                           cand.string()));
      dlclose(h);
    }
    return fs::canonical(cand);
  }
  fail(ErrorKind::Usage, fmt::format("cannot find libkerncap.so next to {} (looked in ../lib and .); "
                                     "set {} to its path",
                                     exe.string(), var));
}

std::string AppExit::describe() const {
  const char* name = forwarded ? sigabbrev_np(forwarded) : nullptr;
  const std::string passed =
      forwarded ? fmt::format(" (kerncap received SIG{} and passed it on)", name ? name : "?") : std::string();
  if (exited) return fmt::format("exited with code {}{}", code, passed);
  return fmt::format("was killed by signal {} ({}){}", code, strsignal(code), passed);
}

namespace {

// The first signal received while the application runs, and one not yet passed on
// (async-signal-safe: the handler only records it).
volatile sig_atomic_t g_forwarded = 0;
volatile sig_atomic_t g_pending = 0;

void on_signal(int sig, siginfo_t* info, void*) {
  // A terminal's Ctrl-C (SIGINT, SIGQUIT from the kernel) already reached the application,
  // which is in kerncap's process group: passing it on would deliver it twice.
  if ((sig == SIGINT || sig == SIGQUIT) && info && info->si_code == SI_KERNEL) return;
  g_pending = sig;
  if (!g_forwarded) g_forwarded = sig;
}

// Every process below this one (the application, and what it started: a `--cmd` shell's
// command, torchrun's workers), from /proc's parent links.
std::vector<pid_t> descendants() {
  std::map<pid_t, std::vector<pid_t>> children;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    FILE* f = std::fopen(("/proc/" + name + "/stat").c_str(), "r");
    if (!f) continue;
    char buf[512];
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char* close = std::strrchr(buf, ')');  // the command name may hold spaces and ')'
    int ppid = 0;
    if (close && std::sscanf(close + 1, " %*c %d", &ppid) == 1)
      children[static_cast<pid_t>(ppid)].push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out, todo{getpid()};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : children[p]) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

// While the application runs: every signal in kSignals is caught (unless it was ignored) and
// passed on to the application and its descendants.
struct Forwarding {
  static constexpr int kSignals[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
  struct sigaction old[std::size(kSignals)]{};
  bool installed[std::size(kSignals)]{};

  Forwarding() {
    g_forwarded = 0;
    g_pending = 0;
    struct sigaction sa{};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      if (sigaction(kSignals[i], nullptr, &old[i]) != 0 || old[i].sa_handler == SIG_IGN) continue;
      installed[i] = sigaction(kSignals[i], &sa, nullptr) == 0;
    }
  }
  ~Forwarding() {
    for (size_t i = 0; i < std::size(kSignals); ++i)
      if (installed[i]) sigaction(kSignals[i], &old[i], nullptr);
  }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;

  // Waits for `pid`, passing on what arrives meanwhile (polled: no signal is lost between a
  // check and a blocking wait).
  int wait(pid_t pid) {
    int status = 0;
    for (;;) {
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) return status;
      if (const int sig = g_pending) {
        g_pending = 0;
        // The whole tree first: a shell killed first leaves its children to init, out of reach.
        const std::vector<pid_t> tree = descendants();
        ::kill(pid, sig);
        for (pid_t d : tree) ::kill(d, sig);
      }
      struct timespec ts{0, 20 * 1000 * 1000};
      nanosleep(&ts, nullptr);
    }
  }
};

// ---- the guard --------------------------------------------------------------------------------
// Between kerncap and the application sits a guard process (forked from kerncap, it never
// execs): the application's parent and a child subreaper, so whatever the application starts
// and leaves (a `--cmd` shell's commands, torchrun's workers) stays below it. When kerncap dies,
// even of SIGKILL, the guard learns it (PR_SET_PDEATHSIG) and kills that whole tree; otherwise
// it waits for the application and ends as it ended, so kerncap reads the application's own
// status. It ignores the signals kerncap passes on (they go to the application and its
// descendants directly). After fork in a process that may have threads, only async-signal-safe
// calls: no allocation, /proc read with read(2) into a fixed buffer.

// The guard's direct children, from /proc/self/task/<tid>/children (a subreaper's orphans
// included); up to `max`, or -1 when the file cannot be read.
int guard_children(pid_t* out, int max) {
  char path[64] = "/proc/self/task/";
  long tid = static_cast<long>(::getpid());  // the guard is single-threaded: its tid is its pid
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + tid % 10);
    tid /= 10;
  } while (tid && n < 20);
  size_t len = std::strlen(path);
  while (n) path[len++] = digits[--n];
  const char* tail = "/children";
  for (const char* c = tail; *c; ++c) path[len++] = *c;
  path[len] = 0;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  static char buf[16384];
  ssize_t got = 0, r = 0;
  while (got < static_cast<ssize_t>(sizeof buf) - 1 && (r = ::read(fd, buf + got, sizeof buf - 1 - got)) > 0) got += r;
  ::close(fd);
  int count = 0;
  long v = -1;
  for (ssize_t i = 0; i <= got && count < max; ++i) {
    const char c = i < got ? buf[i] : ' ';
    if (c >= '0' && c <= '9') v = (v < 0 ? 0 : v * 10) + (c - '0');
    else if (v >= 0) {
      out[count++] = static_cast<pid_t>(v);
      v = -1;
    }
  }
  return count;
}

// kerncap is gone: the application and everything below the guard, until nothing is left.
[[noreturn]] void guard_kill_tree(pid_t app) {
  ::kill(app, SIGKILL);
  for (int round = 0; round < 200; ++round) {  // about 4 s at most
    int status = 0;
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
    pid_t kids[512];
    const int n = guard_children(kids, 512);
    if (n == 0 || (n < 0 && ::waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD)) break;
    for (int i = 0; i < n; ++i) ::kill(kids[i], SIGKILL);
    struct timespec ts{0, 20 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
  _exit(137);
}

// Ends the guard as the application ended (its exit code, or its signal, without a core).
[[noreturn]] void guard_end_like(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  struct rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
  _exit(128 + sig);
}

[[noreturn]] void run_guard(char* const* argv, char* const* envp, int out_fd, int err_fd) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);  // nothing reaches the guard before it is ready
  const pid_t guard = ::getpid();
  const pid_t app = ::fork();
  if (app < 0) _exit(127);
  if (app == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != guard) _exit(127);
    sigprocmask(SIG_SETMASK, &old, nullptr);  // the application gets kerncap's mask and dispositions
    if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    execvpe(argv[0], const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    const char* msg = "kerncap: cannot start the application: ";
    (void)!::write(STDERR_FILENO, msg, std::strlen(msg));
    (void)!::write(STDERR_FILENO, argv[0], std::strlen(argv[0]));
    (void)!::write(STDERR_FILENO, "\n", 1);
    _exit(127);
  }
  struct sigaction ign{};
  ign.sa_handler = SIG_IGN;
  for (int sig : {SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGPIPE}) sigaction(sig, &ign, nullptr);
  sigset_t wanted;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, SIGUSR2);
  for (;;) {
    int status = 0;
    pid_t r;
    while ((r = ::waitpid(-1, &status, WNOHANG)) > 0)
      if (r == app) guard_end_like(status);  // orphans it reaped on the way are done too
    siginfo_t info;
    struct timespec ts{0, 100 * 1000 * 1000};
    if (sigtimedwait(&wanted, &info, &ts) == SIGUSR2) guard_kill_tree(app);
  }
}

}  // namespace

AppExit run_application(const std::vector<std::string>& argv, bool shell,
                        const std::map<std::string, std::string>& env, const AppOutput* output) {
  if (argv.empty()) usage_error("no application command given");
  std::vector<std::string> args = shell ? std::vector<std::string>{"/bin/sh", "-c", argv[0]} : argv;
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    if (!env.contains(key)) envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  // Opened here, so that a path we cannot write is our error, not the application's.
  auto open_output = [](const std::filesystem::path& p) {
    if (p.empty()) return -1;
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) device_error(fmt::format("cannot create {}: {}", p.string(), std::strerror(errno)));
    return fd;
  };
  const int out_fd = output ? open_output(output->stdout_file) : -1;
  const int err_fd = output ? open_output(output->stderr_file) : -1;
  std::fflush(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) device_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    // The guard: killed with kerncap, it takes the application's whole tree with it.
    prctl(PR_SET_PDEATHSIG, SIGUSR2);
    if (getppid() != parent) _exit(127);  // kerncap died before the line above
    run_guard(cargv.data(), cenv.data(), out_fd, err_fd);
  }
  // Signals for us go to the application while it runs (Forwarding); we report what it left.
  int status = 0;
  AppExit r;
  {
    Forwarding fw;
    status = fw.wait(pid);
    r.forwarded = g_forwarded;
  }
  if (out_fd >= 0) ::close(out_fd);
  if (err_fd >= 0) ::close(err_fd);
  if (WIFEXITED(status)) {
    r.exited = true;
    r.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.code = WTERMSIG(status);
  }
  return r;
}

}  // namespace kerncap::extract
