#include "extract/launcher.hpp"

#include <dlfcn.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
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
  if (exited) return fmt::format("exited with code {}", code);
  return fmt::format("was killed by signal {} ({})", code, strsignal(code));
}

AppExit run_application(const std::vector<std::string>& argv, bool shell,
                        const std::map<std::string, std::string>& env) {
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

  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) device_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    execvpe(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "kerncap: cannot start '%s': %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  // Let Ctrl-C reach the application, not us, while it runs.
  struct sigaction ign{}, old_int{}, old_quit{};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  AppExit r;
  if (WIFEXITED(status)) {
    r.exited = true;
    r.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.code = WTERMSIG(status);
  }
  return r;
}

}  // namespace kerncap::extract
