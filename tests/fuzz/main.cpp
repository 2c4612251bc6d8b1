// kerncap_fuzz: runs mutated inputs through the readers and the reproducer writer, each in a
// forked child with CPU and wall-clock limits, in a sanitized build (ASan + UBSan, no
// recovery). Fails on a crash, a sanitizer report, a hang, an "internal error" outcome, or
// any change outside the child's work directory.
//
//   kerncap_fuzz [--seconds N] [--seed S] [--targets a,b] [--fixtures DIR] [--findings DIR]
//   --seconds 1800 for long local runs.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  unsigned cpu_seconds = 1;   // a child using more CPU than this is hung
  unsigned wall_seconds = 5;  // a child blocked this long opened something it should not (FIFO)
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
    else {
      std::fprintf(stderr, "usage: kerncap_fuzz [--seconds N] [--seed S] [--targets "
                           "cubin,reproducer,window,reader,outfiles,locate,profile,serve,records,regimes,\n"
                           "regime-kernels,liveout,replace] "
                           "[--fixtures DIR] [--findings DIR]\n");
      std::exit(2);
    }
  }
  // The fuzzer works from its own temporary directory.
  if (!o.fixtures.empty()) o.fixtures = fs::absolute(o.fixtures);
  if (!o.findings.empty()) o.findings = fs::absolute(o.findings);
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

std::string describe(int status) {
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
  if (sig == SIGALRM) return "blocked past the wall-clock limit (opened a FIFO or device outside the capture?)";
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

int run_child(const Target& t, const fs::path& work, const Options& o) {
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
    alarm(o.wall_seconds + (t.cpu_seconds > o.cpu_seconds ? t.cpu_seconds - o.cpu_seconds : 0));
    _exit(t.run(work));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
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
    for (const auto& t : all_targets())
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
    const int status = run_child(t, work, o);
    Count& c = counts[ti];
    ++c.runs;
    std::string problem = describe(status);
    if (!problem.empty() && log_mentions(work / "child.log", "Sanitizer"))
      problem = "sanitizer report (" + problem + ")";  // a report cut short by a limit is still a report
    if (problem.empty()) (WEXITSTATUS(status) == kAccepted ? c.accepted : c.refused)++;
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
