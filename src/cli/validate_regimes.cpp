#include "cli/validate_regimes.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/out_layout.hpp"
#include "format/regime_kernels.hpp"

extern char** environ;

namespace kerncap::cli {
namespace fs = std::filesystem;
namespace {

struct Child {
  int status = -1;  // exit code, or -1 when it did not exit normally
  std::string out;  // its stdout
};

// `kerncap ARGS...` with stdout captured (stderr passes through: its notes and progress).
Child run_self(const std::vector<std::string>& args) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) device_error("cannot find this kerncap's executable (/proc/self/exe) to run the regimes");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) device_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::vector<std::string> all = {self.string()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  Child c;
  if (rc != 0) {
    ::close(fds[0]);
    device_error(fmt::format("cannot start `kerncap validate` for a regime: {}", std::strerror(rc)));
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      if (c.out.size() < (64u << 20)) c.out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return c;
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

// This process's arguments after the executable, without what the parent decides for the
// children (--json, --min-speedup and its value).
std::vector<std::string> child_args() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  if (args.empty()) device_error("/proc/self/cmdline is unreadable: cannot run the regimes");
  std::vector<std::string> out;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") continue;
    if (a == "--min-speedup") {
      ++i;
      continue;
    }
    if (a.rfind("--min-speedup=", 0) == 0) continue;
    out.push_back(a);
  }
  return out;
}

std::string shape(const format::RegimeEntry& e) {
  std::string s = fmt::format("{}x{}x{} / {}x{}x{}", e.grid[0], e.grid[1], e.grid[2], e.block[0], e.block[1], e.block[2]);
  if (e.dynamic_shared) s += fmt::format(" smem {}", e.dynamic_shared);
  return s;
}

}  // namespace

fs::path regime_dir(const fs::path& out, const std::string& name) {
  if (const size_t slash = name.find('/'); slash != std::string::npos && format::has_regime_kernels(out)) {
    // OUT holds several kernels' sets: KK-<kernel>/NN-<regime>, each part listed in its index.
    const std::string kernel = name.substr(0, slash);
    for (const auto& k : format::read_regime_kernels(out).kernels)
      if (k.dir == kernel) return regime_dir(format::index_subdir(out, k.dir, "kernel set"), name.substr(slash + 1));
    usage_error(fmt::format("--regime {}: {} lists no kernel set {}", name,
                            (out / std::string(format::out::kRegimeKernelsIndex)).string(), kernel));
  }
  const format::RegimesIndex idx = format::read_regimes(out);
  for (const auto& e : idx.regimes) {
    if (e.dir != name) continue;
    if (!e.captured) usage_error(fmt::format("--regime {}: that regime was not captured ({})", name, e.why));
    return format::index_subdir(out, e.dir, "regime");
  }
  usage_error(fmt::format("--regime {}: {} lists no such regime", name, (out / "regimes.json").string()));
}

namespace {

std::string shape_of(const nlohmann::json& r) {
  std::string s = fmt::format("{}x{}x{} / {}x{}x{}", r["grid"][0].get<int64_t>(), r["grid"][1].get<int64_t>(),
                              r["grid"][2].get<int64_t>(), r["block"][0].get<int64_t>(), r["block"][1].get<int64_t>(),
                              r["block"][2].get<int64_t>());
  if (const int64_t smem = r.value("dynamic_shared", int64_t{0})) s += fmt::format(" smem {}", smem);
  return s;
}

// One set's table, from its document.
void print_regime_table(const nlohmann::json& doc) {
  std::cout << fmt::format("{} over {} regime(s):\n", doc["kernel"].get<std::string>(), doc["regimes"].size());
  std::cout << fmt::format("  {:<28} {:<26} {:>8} {:>7} {:>9}  {}\n", "regime", "grid / block", "launches", "share",
                           "speed-up", "verdict");
  for (const nlohmann::json& r : doc["regimes"]) {
    const std::string sp = r["speedup"].is_number() ? fmt::format("x{:.3f}", r["speedup"].get<double>()) : "-";
    std::string line = r.value("line", "");
    if (line.size() > 160) line = line.substr(0, 157) + "...";
    std::cout << fmt::format("  {:<28} {:<26} {:>8} {:>6.1f}% {:>9}  {}\n", r["dir"].get<std::string>(), shape_of(r),
                             r["launches"].get<uint64_t>(), 100 * r["share"].get<double>(), sp, line);
  }
  if (doc["app_projection"].is_number())
    std::cout << fmt::format("  weighted speed-up x{:.3f}; the application's GPU time x{:.3f} (Amdahl, over the "
                             "profiled run)\n",
                             doc["weighted_speedup"].get<double>(), doc["app_projection"].get<double>());
  std::cout << doc["line"].get<std::string>() << "\n";
}

// The set in `out` judged, each regime by a child `kerncap validate ... --regime PREFIX<dir>`.
nlohmann::json judge_regime_set(const fs::path& out, const std::string& prefix, bool variant,
                                std::optional<double> min_speedup, bool chatty) {
  const format::RegimesIndex idx = format::read_regimes(out);
  const std::vector<std::string> base = child_args();
  std::vector<RegimeOutcome> outcomes;
  size_t k = 0, captured = 0;
  for (const auto& e : idx.regimes) captured += e.captured;
  if (captured == 0)
    input_error(fmt::format("{}: no regime of this set was captured, so there is nothing to judge (extract it again: "
                            "`kerncap extract KERNEL --regimes`)",
                            (out / "regimes.json").string()));
  for (const auto& e : idx.regimes) {
    if (!e.captured) continue;
    ++k;
    if (chatty)
      std::fprintf(stderr, "kerncap: regime %zu of %zu: %s%s (%s, %.1f%% of the kernel's GPU time)\n", k, captured,
                   prefix.c_str(), e.dir.c_str(), shape(e).c_str(), 100 * e.share);
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--regime", prefix + e.dir, "--json", "--speedup"});
    // As every set is judged (replay::regime_judging): speed-up in the regime's session, at
    // the application's L2 state unless the user chose one.
    const bool cache_given = std::any_of(base.begin(), base.end(), [](const std::string& a) {
      return a.rfind("--speedup-cache", 0) == 0;
    });
    if (!cache_given) args.insert(args.end(), {"--speedup-cache", replay::kRegimeSpeedupCache});
    const Child c = run_self(args);
    RegimeOutcome o = replay::regime_outcome(
        e, nlohmann::json::parse(c.out, nullptr, false),
        fmt::format("`kerncap validate --regime {}{}` ended with status {} without a verdict", prefix, e.dir, c.status));
    outcomes.push_back(std::move(o));
  }
  for (const auto& o : outcomes) variant = variant || o.speedup.has_value();  // the reproducers' fresh variants
  return replay::regime_verdict(idx, outcomes, min_speedup, variant);
}

}  // namespace

int validate_regimes(const fs::path& out, bool variant, std::optional<double> min_speedup, bool as_json, bool quiet) {
  const nlohmann::json doc = judge_regime_set(out, "", variant, min_speedup, !quiet && !as_json);
  if (as_json) std::cout << doc.dump(2) << std::endl;
  else print_regime_table(doc);
  return doc["result"] == "PASS" ? 0 : 1;
}

nlohmann::json regime_kernels_verdict(const std::vector<std::pair<std::string, nlohmann::json>>& sets) {
  nlohmann::json kernels = nlohmann::json::array();
  std::vector<std::string> failed;
  size_t regimes = 0;
  for (const auto& [dir, doc] : sets) {
    nlohmann::json k = doc;
    k["dir"] = dir;
    if (doc.value("result", "FAIL") != "PASS") failed.push_back(dir);
    if (doc.contains("regimes") && doc["regimes"].is_array()) regimes += doc["regimes"].size();
    kernels.push_back(std::move(k));
  }
  const std::string line =
      failed.empty()
          ? fmt::format("Result: PASS ({} kernel(s), {} regime(s), every one passes)", sets.size(), regimes)
          : fmt::format("Result: FAIL ({} of {} kernel(s) fail: {})", failed.size(), sets.size(), fmt::join(failed, ", "));
  return {{"format", kRegimeKernelsVerdictFormat},
          {"version", kRegimeKernelsVerdictVersion},
          {"kernels", std::move(kernels)},
          {"failed", failed},
          {"result", failed.empty() ? "PASS" : "FAIL"},
          {"line", line}};
}

int validate_regime_kernels(const fs::path& out, bool variant, std::optional<double> min_speedup, bool as_json,
                            bool quiet) {
  const format::RegimeKernels listing = format::read_regime_kernels(out);
  if (variant) {
    std::string dirs;
    for (const auto& k : listing.kernels) dirs += fmt::format("\n  {}  {}", (out / k.dir).string(), k.demangled);
    usage_error(fmt::format("{} holds the regime sets of {} kernels; a variant is judged on the set of its own "
                            "kernel: kerncap validate {}/KK-<name> --cubin V{}",
                            out.string(), listing.kernels.size(), out.string(), dirs));
  }
  if (min_speedup) usage_error("--min-speedup compares a variant with the captured image: give one kernel's set and --cubin V");
  std::vector<std::pair<std::string, nlohmann::json>> sets;
  for (const auto& k : listing.kernels) {
    if (!k.captured) continue;
    if (!quiet && !as_json) std::fprintf(stderr, "kerncap: kernel set %s: %s\n", k.dir.c_str(), k.demangled.c_str());
    sets.emplace_back(k.dir, judge_regime_set(format::index_subdir(out, k.dir, "kernel set"), k.dir + "/", false,
                                              std::nullopt, !quiet && !as_json));
    if (!as_json) print_regime_table(sets.back().second);
  }
  if (sets.empty())
    input_error(fmt::format("{}: no regime of any kernel was captured, so there is nothing to judge",
                            (out / std::string(format::out::kRegimeKernelsIndex)).string()));
  const nlohmann::json doc = regime_kernels_verdict(sets);
  if (as_json) std::cout << doc.dump(2) << std::endl;
  else std::cout << doc["line"].get<std::string>() << "\n";
  return doc["result"] == "PASS" ? 0 : 1;
}

}  // namespace kerncap::cli
