// Fault matrix (issue 38), the launcher's rows that need no GPU: the application never outlives
// `kerncap extract`. A SIGTERM (or SIGHUP, or a SIGINT another process sends) to kerncap reaches
// the application and what it started (a `--cmd` shell's command), and kerncap reports what
// happened; a SIGKILLed kerncap takes the application with it. Before: kerncap died of SIGTERM
// and left the application running; SIGINT from another process was ignored.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "extract/launcher.hpp"

namespace kerncap::extract {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  Scratch() {
    char tmpl[] = "/tmp/kerncap-launcher-XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~Scratch() { fs::remove_all(dir); }
};

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// The pid a shell wrote into `file`, once it is there (0 after 10 s).
pid_t wait_pid_file(const fs::path& file) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream in(file);
    long pid = 0;
    if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

// A launcher (a forked copy of this test, as `kerncap extract` is) running `sh -c` with a
// command that leaves the shell waiting for its `sleep` (so the shell is not the sleep); the
// launcher writes what run_application returned into `report`.
// With `direct`, the shell becomes the sleep (exec): a background job of a non-interactive
// shell ignores SIGINT, as it does under a terminal's Ctrl-C.
pid_t start_launcher(const Scratch& s, const fs::path& report, bool direct) {
  const std::string pidfile = (s.dir / "app.pid").string();
  const std::string cmd =
      direct ? "echo $$ > " + pidfile + "; exec sleep 60" : "sleep 60 & echo $! > " + pidfile + "; wait";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const AppExit e = run_application({cmd}, true, {});
    std::ofstream(report) << e.describe() << "\n" << e.forwarded << "\n";
    ::_exit(0);
  }
  return pid;
}

void expect_gone(pid_t app) {
  for (int i = 0; i < 250 && alive(app); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (alive(app)) {
    ::kill(app, SIGKILL);  // this test's own process, left over
    ADD_FAILURE() << "the application (pid " << app << ") outlived the launcher";
  }
}

void signal_passed_on(int sig, bool direct) {
  Scratch s;
  const fs::path report = s.dir / "report";
  const pid_t launcher = start_launcher(s, report, direct);
  const pid_t app = wait_pid_file(s.dir / "app.pid");
  ASSERT_GT(app, 0);
  ASSERT_TRUE(alive(app));
  ASSERT_EQ(::kill(launcher, sig), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  // The launcher went on to report (exit 0), having passed the signal on.
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "launcher status " << status;
  std::ifstream in(report);
  std::string line;
  std::getline(in, line);
  int forwarded = 0;
  in >> forwarded;
  EXPECT_EQ(forwarded, sig) << line;
  EXPECT_NE(line.find("passed it on"), std::string::npos) << line;
  expect_gone(app);
}

TEST(LauncherSignals, SigtermReachesTheApplicationAndWhatItStarted) { signal_passed_on(SIGTERM, false); }
TEST(LauncherSignals, SighupReachesTheApplication) { signal_passed_on(SIGHUP, false); }
TEST(LauncherSignals, SigintFromAnotherProcessReachesTheApplication) { signal_passed_on(SIGINT, true); }

TEST(LauncherSignals, ASigkilledLauncherTakesTheApplicationWithIt) {
  Scratch s;
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    // The application itself (no shell between): PR_SET_PDEATHSIG reaches the direct child.
    const std::string pidfile = (s.dir / "app.pid").string();
    run_application({"/bin/sh", "-c", "echo $$ > " + pidfile + "; exec sleep 60"}, false, {});
    ::_exit(0);
  }
  const pid_t app = wait_pid_file(s.dir / "app.pid");
  ASSERT_GT(app, 0);
  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  expect_gone(app);
}

TEST(LauncherSignals, ASigkilledLauncherTakesWhatTheApplicationStartedWithIt) {
  // `--cmd` through a shell that leaves a child running (torchrun's workers, a pipeline): the
  // guard between kerncap and the application kills the whole tree when kerncap dies.
  Scratch s;
  const fs::path report = s.dir / "report";
  const pid_t launcher = start_launcher(s, report, false);
  const pid_t worker = wait_pid_file(s.dir / "app.pid");  // the shell's background sleep
  ASSERT_GT(worker, 0);
  ASSERT_TRUE(alive(worker));
  ASSERT_EQ(::kill(launcher, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  expect_gone(worker);
}

TEST(LauncherSignals, TheApplicationsOwnEndIsReported) {
  // Through the guard: an exit code, and a signal, reach kerncap as the application's own.
  const AppExit code = run_application({"exit 7"}, true, {});
  EXPECT_TRUE(code.exited);
  EXPECT_EQ(code.code, 7);
  const AppExit killed = run_application({"kill -SEGV $$"}, true, {});
  EXPECT_FALSE(killed.exited);
  EXPECT_EQ(killed.code, SIGSEGV) << killed.describe();
  const AppExit missing = run_application({"/no/such/program"}, false, {});
  EXPECT_TRUE(missing.exited);
  EXPECT_EQ(missing.code, 127);
}

TEST(LauncherSignals, AnIgnoredSignalStaysIgnored) {
  // nohup: SIGHUP ignored when kerncap starts; the application runs on, kerncap too.
  Scratch s;
  const fs::path report = s.dir / "report";
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    ::signal(SIGHUP, SIG_IGN);
    const AppExit e = run_application({"sleep 0.5"}, true, {});
    std::ofstream(report) << e.describe() << "\n";
    ::_exit(e.exited && e.code == 0 ? 0 : 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(launcher, SIGHUP);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

}  // namespace
}  // namespace kerncap::extract
