// kerncap_fuzz: runs mutated inputs through the readers and the reproducer writer, each in a
// forked child with CPU and wall-clock limits, in a sanitized build (ASan + UBSan, no
// recovery). Fails on a crash, a sanitizer report, a hang, an "internal error" outcome, or
// any change outside the child's work directory.
//
//   kerncap_fuzz [--seconds N] [--seed S] [--targets a,b] [--fixtures DIR] [--findings DIR]
//   kerncap_fuzz --replay FINDING_DIR --targets t   (one saved input again, with its times)
//   --seconds 1800 for long local runs.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "targets.hpp"

// Sanitizer settings for every child: stop at the first report with a recognisable exit
// code, no leak check (children _exit), and no allocation the size a bomb asks for.
extern "C" const char* __asan_default_options() {
  return "exitcode=86:detect_leaks=0:allocator_may_return_null=0:malloc_limit_mb=1536:hard_rss_limit_mb=3072";
}
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1:exitcode=87"; }

namespace {

using namespace kerncap::fuzz;

struct Options {
  double seconds = 60;
  uint64_t seed = 1;
  std::vector<std::string> targets = {"cubin", "reproducer"};
  fs::path fixtures;
  fs::path findings;
  fs::path replay;            // a saved finding's directory, run once
  unsigned cpu_seconds = 1;   // a child using more CPU than this is hung
  // Past this many wall-clock seconds a child that sleeps without using CPU opened something it
  // should not (a FIFO): it is blocked. One that still gets CPU is only slow to be scheduled (a
  // loaded machine, nice): its CPU limit judges it, and the hard limit below bounds the wait.
  unsigned wall_seconds = 5;
  unsigned hard_wall_seconds = 300;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kerncap_fuzz: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds") o.seconds = std::stod(next());
    else if (a == "--seed") o.seed = std::stoull(next());
    else if (a == "--targets") o.targets = split(next());
    else if (a == "--fixtures") o.fixtures = next();
    else if (a == "--findings") o.findings = next();
    else if (a == "--replay") o.replay = next();
    else {
      std::fprintf(stderr, "usage: kerncap_fuzz [--seconds N] [--seed S] [--targets "
                           "cubin,reproducer,window,reader,outfiles,locate,profile,serve,records,regimes,\n"
                           "regime-kernels,liveout,replace] "
                           "[--fixtures DIR] [--findings DIR] [--replay FINDING_DIR]\n");
      std::exit(2);
    }
  }
  // The fuzzer works from its own temporary directory.
  if (!o.fixtures.empty()) o.fixtures = fs::absolute(o.fixtures);
  if (!o.findings.empty()) o.findings = fs::absolute(o.findings);
  if (!o.replay.empty()) o.replay = fs::absolute(o.replay);
  return o;
}

// What must not change while a child runs: the root's entries and the sentinel's files.
std::string snapshot(const fs::path& root, const fs::path& sentinel) {
  std::string s;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(root)) names.insert(e.path().filename().string());
  for (const auto& n : names) s += n + "\n";
  for (const auto& e : fs::directory_iterator(sentinel)) {
    struct stat st{};
    lstat(e.path().c_str(), &st);
    s += e.path().filename().string() + " " + std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "\n";
  }
  return s;
}

// How a child ended: its wait status, its CPU seconds, its wall seconds, and what the parent
// saw when it ended it (empty when the child ended by itself or by its CPU limit).
struct ChildEnd {
  int status = 0;
  double cpu_s = 0, wall_s = 0;
  std::string stopped;
};

std::string describe(const ChildEnd& end) {
  if (!end.stopped.empty()) return end.stopped;
  const int status = end.status;
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kAccepted: return "";
      case kRefused: return "";
      case kInternal: return "internal error (an exception other than a typed input error)";
      case 86: return "AddressSanitizer report";
      case 87: return "UndefinedBehaviorSanitizer report";
      default: return "exit " + std::to_string(WEXITSTATUS(status));
    }
  }
  const int sig = WTERMSIG(status);
  if (sig == SIGXCPU) return "hang (more than the CPU limit)";
  return std::string("killed by signal ") + strsignal(sig);
}

bool log_mentions(const fs::path& log, const char* needle) {
  std::FILE* f = std::fopen(log.c_str(), "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  for (int n = 0; n < 200 && !found && std::fgets(line, sizeof line, f); ++n) found = std::strstr(line, needle) != nullptr;
  std::fclose(f);
  return found;
}

// A running child's CPU ticks (user + system) and scheduler state from /proc/PID/stat
// ('R' runnable, 'S' asleep, 'D' in I/O...); false once it is gone.
bool child_cpu(pid_t pid, unsigned long long& ticks, char& state) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return false;
  std::istringstream in(text.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  in >> state;
  for (int i = 4; i <= 13 && in >> field; ++i) {  // fields 4..13: ppid .. cmajflt
  }
  if (!(in >> utime >> stime)) return false;
  ticks = utime + stime;
  return true;
}

std::string child_wchan(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/wchan");
  std::string w;
  std::getline(f, w);
  return w.empty() || w == "0" ? "" : ", waiting in " + w;
}

std::string fmt_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", s);
  return b;
}

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }

// Runs the target in a forked child with its CPU limit (RLIMIT_CPU: a hang) and watches its
// wall-clock time from here. Past the wall limit a child is "blocked" only when it sleeps and
// has used no CPU for two seconds in a row (a FIFO's open or read); one that is runnable or
// still gaining CPU is only slow to be scheduled on a loaded machine and may go on until its
// CPU limit or the hard wall limit. (An alarm in the child judged by wall time alone: on a
// 2-core machine shared with builds, 15 inputs that take 1.5 CPU s were "blocked".)
ChildEnd run_child(const Target& t, const fs::path& work, const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("kerncap_fuzz: fork");
    std::exit(1);
  }
  if (pid == 0) {
    if (chdir(work.c_str()) != 0) _exit(90);
    const int log = open("child.log", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (log >= 0) {
      dup2(log, 1);
      dup2(log, 2);
    }
    const rlim_t cpu_limit = t.cpu_seconds ? t.cpu_seconds : o.cpu_seconds;
    rlimit cpu{cpu_limit, cpu_limit + 1};
    setrlimit(RLIMIT_CPU, &cpu);
    _exit(t.run(work));
  }
  const unsigned cpu_limit = t.cpu_seconds ? t.cpu_seconds : o.cpu_seconds;
  const double wall_limit = o.wall_seconds + (cpu_limit > o.cpu_seconds ? cpu_limit - o.cpu_seconds : 0);
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  ChildEnd end;
  rusage ru{};
  unsigned long long last_ticks = 0;
  int idle_checks = 0;  // checks past the wall limit in a row with no CPU gained, asleep
  auto next_check = wall_limit;
  for (long nap_us = 200;;) {
    const pid_t r = wait4(pid, &end.status, WNOHANG, &ru);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      std::perror("kerncap_fuzz: wait4");
      std::exit(1);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (wall >= next_check && end.stopped.empty()) {
      next_check = wall + 1.0;
      unsigned long long ticks = 0;
      char state = '?';
      if (child_cpu(pid, ticks, state)) {
        const bool asleep = state == 'S' || state == 'D' || state == 'T' || state == 't';
        idle_checks = asleep && ticks == last_ticks ? idle_checks + 1 : 0;
        last_ticks = ticks;
        if (idle_checks >= 3)  // the first check only sets last_ticks
          end.stopped = "blocked past the wall-clock limit: asleep (state " + std::string(1, state) +
                        child_wchan(pid) + ") with no CPU time gained for 2 s after " +
                        std::to_string(static_cast<int>(wall_limit)) + " s, " +
                        fmt_seconds(static_cast<double>(ticks) / tick) +
                        " CPU s in all (opened a FIFO or device outside the capture?)";
        else if (wall >= o.hard_wall_seconds)
          end.stopped = "still running after the hard wall-clock limit of " + std::to_string(o.hard_wall_seconds) +
                        " s (" + fmt_seconds(static_cast<double>(ticks) / tick) + " CPU s, state " +
                        std::string(1, state) + "): slow to be scheduled, or blocked while spinning";
        if (!end.stopped.empty()) kill(pid, SIGKILL);
      }
    }
    timespec ts{0, nap_us * 1000};
    nanosleep(&ts, nullptr);
    nap_us = std::min<long>(nap_us * 2, 20000);  // quick inputs are reaped quickly; long ones cost little
  }
  end.cpu_s = seconds_of(ru.ru_utime) + seconds_of(ru.ru_stime);
  end.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return end;
}

// The watch's own checks (CTest fuzz_hang_watch): a child that blocks on a FIFO must be
// reported blocked, one that spins past its CPU limit hung, and one that only sleeps a
// little past the wall limit while it still works must not be reported at all.
void prepare_fifo(const Seeds&, Rng&, const fs::path& work) { mkfifo((work / "fifo").c_str(), 0600); }
int run_fifo(const fs::path& work) {
  std::ifstream in(work / "fifo");  // blocks: nobody writes
  return kAccepted;
}
void prepare_nothing(const Seeds&, Rng&, const fs::path&) {}
int run_spin(const fs::path&) {
  volatile uint64_t sink = 0;
  for (uint64_t i = 0;; ++i) sink = i;
}
int run_slow(const fs::path&) {  // 7 s of wall clock, a little CPU every 100 ms
  for (int i = 0; i < 70; ++i) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
    while (std::chrono::steady_clock::now() < until) {
    }
    timespec ts{0, 95'000'000};
    nanosleep(&ts, nullptr);
  }
  return kAccepted;
}
const std::vector<Target>& self_checks() {
  static const std::vector<Target> t = {{"selfcheck-fifo", prepare_fifo, run_fifo},
                                        {"selfcheck-spin", prepare_nothing, run_spin},
                                        {"selfcheck-slow", prepare_nothing, run_slow}};
  return t;
}

std::string judge(const ChildEnd& end, const fs::path& work) {
  std::string problem = describe(end);
  if (!problem.empty() && log_mentions(work / "child.log", "Sanitizer"))
    problem = "sanitizer report (" + problem + ")";  // a report cut short by a limit is still a report
  return problem;
}

// --replay DIR: a saved finding's input (the work directory as it was) run again by the first
// target named, in a copy, with the same limits; prints its outcome and CPU and wall seconds.
int replay(const Options& o) {
  const Target* t = nullptr;
  for (const auto* list : {&all_targets(), &self_checks()})
    for (const auto& cand : *list)
      if (!o.targets.empty() && cand.name == o.targets.front()) t = &cand;
  if (!t) {
    std::fprintf(stderr, "kerncap_fuzz: --replay needs --targets NAME (the finding's target)\n");
    return 2;
  }
  char tmpl[] = "/tmp/kerncap-fuzz-replay-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  const fs::path work = fs::path(tmpl) / "work";
  fs::copy(o.replay, work, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const ChildEnd end = run_child(*t, work, o);
  const std::string problem = judge(end, work);
  std::printf("kerncap_fuzz: replay of %s by %s: %s, %s CPU s, %s s\n", o.replay.c_str(), t->name.c_str(),
              problem.empty() ? (WEXITSTATUS(end.status) == kAccepted ? "accepted" : "refused") : problem.c_str(),
              fmt_seconds(end.cpu_s).c_str(), fmt_seconds(end.wall_s).c_str());
  if (std::FILE* log = std::fopen((work / "child.log").c_str(), "r")) {
    char line[512];
    for (int n = 0; n < 30 && std::fgets(line, sizeof line, log); ++n) std::printf("  | %s", line);
    std::fclose(log);
  }
  fs::remove_all(tmpl);
  return problem.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!o.replay.empty()) return replay(o);
  char tmpl[] = "/tmp/kerncap-fuzz-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("kerncap_fuzz: mkdtemp");
    return 1;
  }
  const fs::path root = tmpl;
  const fs::path sentinel = root / "sentinel", work = root / "work";
  fs::create_directories(sentinel);
  std::FILE* f = std::fopen((sentinel / "secret").c_str(), "w");
  std::fputs("outside the capture\n", f);
  std::fclose(f);
  mkfifo((sentinel / "fifo").c_str(), 0600);  // whoever opens it blocks: a read outside shows as a hang
  if (chdir(root.c_str()) != 0) return 1;     // relative writes that escape land in the root
  const Seeds seeds = load_seeds(o.fixtures, root / "seeds", sentinel);

  std::vector<const Target*> chosen;
  for (const auto& name : o.targets) {
    const Target* found = nullptr;
    for (const auto* list : {&all_targets(), &self_checks()})
      for (const auto& t : *list)
        if (t.name == name) found = &t;
    if (!found) {
      std::fprintf(stderr, "kerncap_fuzz: no target '%s' (cubin, reproducer, window, reader, outfiles, locate, "
                           "profile, serve, records, regimes, regime-kernels, liveout, replace)\n", name.c_str());
      return 2;
    }
    chosen.push_back(found);
  }
  std::printf("kerncap_fuzz: %.0f s, seed %llu, %zu code objects and %zu captures as seeds, in %s\n", o.seconds,
              static_cast<unsigned long long>(o.seed), seeds.code_objects.size(), seeds.captures.size(),
              root.c_str());
  std::fflush(stdout);

  fs::create_directories(work);
  const std::string before = snapshot(root, sentinel);
  struct Count {
    uint64_t runs = 0, accepted = 0, refused = 0, findings = 0;
  };
  std::vector<Count> counts(chosen.size());
  Rng rng(o.seed);
  const auto start = std::chrono::steady_clock::now();
  uint64_t total_findings = 0;
  for (uint64_t i = 0;; ++i) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= o.seconds) break;
    const size_t ti = i % chosen.size();
    const Target& t = *chosen[ti];
    fs::remove_all(work);
    fs::create_directories(work);
    Rng input_rng(rng());
    t.prepare(seeds, input_rng, work);
    const ChildEnd end = run_child(t, work, o);
    Count& c = counts[ti];
    ++c.runs;
    std::string problem = judge(end, work);
    if (problem.empty()) (WEXITSTATUS(end.status) == kAccepted ? c.accepted : c.refused)++;
    if (!problem.empty()) problem += " [" + fmt_seconds(end.cpu_s) + " CPU s, " + fmt_seconds(end.wall_s) + " s]";
    const std::string after = snapshot(root, sentinel);
    if (after != before) problem += (problem.empty() ? "" : "; ") + std::string("changed files outside its work directory");
    if (problem.empty()) continue;
    ++c.findings;
    ++total_findings;
    std::printf("FINDING %s #%llu: %s\n", t.name.c_str(), static_cast<unsigned long long>(c.runs), problem.c_str());
    std::error_code ec;
    if (std::FILE* log = std::fopen((work / "child.log").c_str(), "r")) {
      char line[512];
      for (int n = 0; n < 30 && std::fgets(line, sizeof line, log); ++n) std::printf("  | %s", line);
      std::fclose(log);
    }
    if (!o.findings.empty()) {
      const fs::path keep = o.findings / (t.name + "-" + std::to_string(o.seed) + "-" + std::to_string(c.runs));
      fs::create_directories(keep, ec);
      fs::copy(work, keep, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
      std::FILE* r = std::fopen((keep / "FINDING.txt").c_str(), "w");
      if (r) {
        std::fprintf(r, "target %s\nproblem: %s\nseed %llu, input %llu\n", t.name.c_str(), problem.c_str(),
                     static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(c.runs));
        std::fclose(r);
      }
      std::printf("  saved in %s\n", keep.c_str());
    }
    // Put the root back as it was, so one escape is not reported on every later input.
    for (const auto& e : fs::directory_iterator(root)) {
      const std::string n = e.path().filename().string();
      if (n != "sentinel" && n != "work") fs::remove_all(e.path(), ec);
    }
    std::fflush(stdout);
    if (after != before && snapshot(root, sentinel) != before) break;  // the sentinel itself changed
  }
  for (size_t i = 0; i < chosen.size(); ++i)
    std::printf("  %-14s %8llu inputs  %8llu accepted  %8llu refused  %llu findings\n", chosen[i]->name.c_str(),
                static_cast<unsigned long long>(counts[i].runs), static_cast<unsigned long long>(counts[i].accepted),
                static_cast<unsigned long long>(counts[i].refused), static_cast<unsigned long long>(counts[i].findings));
  fs::remove_all(root);
  std::printf("kerncap_fuzz: %s\n", total_findings ? "FAILED" : "clean");
  return total_findings ? 1 : 0;
}
