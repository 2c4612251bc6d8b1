#include "extract/regime_run.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/profile_run.hpp"
#include "extract/targets.hpp"
#include "names/demangle.hpp"
#include "names/match.hpp"
#include "profile/regimes.hpp"

namespace kerncap::extract {
namespace {

void progress(const Request& r, const std::string& line) {
  if (!r.quiet) std::fprintf(stderr, "kerncap: %s\n", line.c_str());
}

// The matching kernel with the most GPU time (host launches, benchmarks left out), and the
// other matching names, for a note.
std::string pick_kernel(const std::vector<format::ProcessRecords>& records, const names::Matcher& pattern,
                        std::vector<std::string>* others) {
  std::map<std::string, uint64_t> time;
  for (const auto& p : records) {
    std::vector<int> matches(p.names.size(), -1);
    for (const auto& k : p.kernels) {
      if (k.device_launched || k.benchmark || k.name_id >= p.names.size()) continue;
      int& m = matches[k.name_id];
      const std::string& name = p.names[k.name_id];
      if (m < 0) m = pattern.matches(name, names::demangle(name)) ? 1 : 0;
      if (m) time[name] += k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 0;
    }
  }
  std::string best;
  uint64_t best_ns = 0;
  for (const auto& [name, ns] : time)
    if (best.empty() || ns > best_ns) best = name, best_ns = ns;
  for (const auto& [name, ns] : time)
    if (name != best) others->push_back(name);
  return best;
}

std::string shape_text(const format::RegimeEntry& e) {
  std::string s = fmt::format("grid {}x{}x{} block {}x{}x{}", e.grid[0], e.grid[1], e.grid[2], e.block[0], e.block[1],
                              e.block[2]);
  if (e.cluster[0]) s += fmt::format(" cluster {}x{}x{}", e.cluster[0], e.cluster[1], e.cluster[2]);
  if (e.dynamic_shared) s += fmt::format(" dynamic shared {} B", e.dynamic_shared);
  return s;
}


}  // namespace

std::vector<std::string> regime_kernels(const std::vector<format::ProcessRecords>& records, const RegimeSelection& sel,
                                        bool regex, std::vector<std::string>& notes) {
  std::vector<std::string> out;
  auto add = [&](const std::string& m) {
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  };
  for (const std::string& pat : sel.patterns) {
    const names::Matcher pattern = [&] {
      try {
        return names::Matcher(pat, regex);
      } catch (const std::regex_error& e) {
        usage_error(fmt::format("--regex '{}': {}", pat, e.what()));
      }
    }();
    std::vector<std::string> others;
    const std::string mangled = pick_kernel(records, pattern, &others);
    if (mangled.empty())
      input_error(fmt::format("no launched kernel matches '{}' in the profiled run{}", pat,
                              records.empty() ? " (no process recorded a kernel)" : ""));
    if (!others.empty())
      notes.push_back(fmt::format("'{}' also matches {} other kernel(s) ({}{}); the regimes are of {}, the one "
                                      "with the most GPU time (name another with a longer pattern)",
                                      pat, others.size(), names::demangle(others[0]), others.size() > 1 ? ", ..." : "",
                                      names::demangle(mangled)));
    if (std::find(out.begin(), out.end(), mangled) != out.end())
      notes.push_back(fmt::format("'{}' names {} again; its regimes are taken once", pat, names::demangle(mangled)));
    add(mangled);
  }
  if (sel.top) {
    // GPU time per kernel over every process's host launches (what extract counts).
    std::map<std::string, uint64_t> time;
    for (const auto& p : records)
      for (const auto& k : p.kernels)
        if (!k.device_launched && !k.benchmark && k.name_id < p.names.size())
          time[p.names[k.name_id]] += k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 0;
    std::vector<std::string> all;
    for (const auto& [name, ns] : time) all.push_back(name);
    std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) { return time[a] > time[b]; });
    size_t taken = 0;
    for (const auto& m : all) {
      if (taken == sel.top) break;
      if (std::find(out.begin(), out.end(), m) != out.end()) continue;
      add(m);
      ++taken;
    }
    if (out.empty()) input_error("--top: no kernel was launched from the host in the profiled run");
    if (taken < sel.top)
      notes.push_back(fmt::format("--top {}: the application launched only {} other kernel(s)", sel.top, taken));
  }
  return out;
}


RegimeResult run_regimes(const Request& r, const RegimeSelection& sel) {
  if (!r.targets.empty() || !r.kernel.empty())
    usage_error("--regimes names its kernels itself (KERNEL, --kernel, --top), not as capture targets");
  if (sel.patterns.empty() && sel.top == 0)
    usage_error("--regimes needs the kernel: kerncap extract KERNEL --regimes -o OUT -- APP (or --kernel A --kernel B, "
                "or --top N)");
  if (sel.max == 0 || sel.max > format::kMaxRegimes)
    usage_error(fmt::format("--max-regimes {}: expected 1..{}", sel.max, format::kMaxRegimes));
  if (sel.top > format::kMaxRegimeKernels)
    usage_error(fmt::format("--top {} with --regimes: at most {} kernels", sel.top, format::kMaxRegimeKernels));
  check_request(r);

  // 1. The shapes: a profiled run (every launch timed).
  RegimeResult res;
  progress(r, "regimes: run 1 of 2, profiling every launch of the application to find the launch shapes");
  const AppCommand app{r.cmd, r.argv};
  std::vector<format::ProcessRecords> records;
  {
    RecordsDir dir("");
    ProfiledRun how;
    how.verbose = r.verbose;
    how.sample = 0;  // every launch timed (Config::profile_sample 0; 1 is refused by the library)
    // The kernels named get parameter signatures (a regime is a shape and its scalar arguments).
    for (const std::string& pat : sel.patterns)
      how.params.push_back({pat, r.regex ? format::MatchKind::Regex : format::MatchKind::Substring});
    const AppExit exit = run_profiled(app, dir.path(), how);
    records = format::read_records(dir.path());
    if (!(exit.exited && exit.code == 0))
      res.notes.push_back(fmt::format("the profiled run of the application {}", exit.describe()));
  }
  const std::vector<std::string> kernels = regime_kernels(records, sel, r.regex, res.notes);
  const std::string application = r.cmd.empty() ? fmt::format("{}", fmt::join(r.argv, " ")) : r.cmd;

  // 2. Each kernel's regimes, and one target per regime: its first launch, by exact name.
  Request run = r;
  run.regex = false;
  std::vector<profile::RegimeSet> found;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const std::string& mangled = kernels[k];
    profile::RegimeSet set = profile::find_regimes(records, mangled, sel.max);
    const std::string demangled = names::demangle(mangled);
    if (set.regimes.empty())
      input_error(fmt::format("{} was launched only from the device or in benchmarks", demangled));
    if (set.other_processes)
      res.notes.push_back(fmt::format("{}: {} other process(es) launched it too; the regimes are those of process {}",
                                      demangled, set.other_processes, set.pid));
    if (set.dropped)
      res.notes.push_back(fmt::format("{}: {} more regime(s) ({} launches, {:.1f}% of its GPU time) beyond "
                                      "--max-regimes {} are not captured",
                                      demangled, set.dropped, set.dropped_launches,
                                      set.time_ns ? 100.0 * static_cast<double>(set.dropped_ns) / set.time_ns : 0.0,
                                      sel.max));
    for (const std::string& note : profile::signature_notes(set)) res.notes.push_back(demangled + ": " + note);
    RegimeSetResult s;
    if (!sel.flat()) s.dir = fmt::format("{:02}-{}", k, safe_name(demangled));
    format::RegimesIndex& idx = s.index;
    idx.mangled = mangled;
    idx.demangled = demangled;
    idx.application = application;
    idx.pid = set.pid;
    idx.launches = set.launches;
    idx.time_ns = set.time_ns;
    idx.app_time_ns = set.app_time_ns;
    idx.uncounted = set.uncounted;
    idx.dropped_regimes = set.dropped;
    idx.dropped_launches = set.dropped_launches;
    idx.dropped_ns = set.dropped_ns;
    for (size_t i = 0; i < set.regimes.size(); ++i) {
      TargetRequest t{mangled, format::MatchKind::Exact, set.regimes[i].dispatch, demangled, ""};
      if (!sel.flat()) t.dir = s.dir + "/" + target_dir_name(i, t);
      run.targets.push_back(std::move(t));
    }
    progress(r, fmt::format("regimes: {} launch shape(s) of {} over {} launches", set.regimes.size(), demangled,
                            set.launches));
    found.push_back(std::move(set));
    res.sets.push_back(std::move(s));
  }
  if (run.targets.size() > format::kMaxTargets)
    usage_error(fmt::format("{} kernels with up to {} regimes each make {} captures; one run takes at most {} (lower "
                            "--max-regimes or name fewer kernels)",
                            kernels.size(), sel.max, run.targets.size(), format::kMaxTargets));
  run.kernel.clear();
  progress(r, fmt::format("regimes: run 2 of 2 captures the first launch of each of the {} regime(s)",
                          run.targets.size()));
  res.captures = run_captures(run);

  size_t t_index = 0;
  format::RegimeKernels listing;
  listing.application = application;
  for (size_t k = 0; k < res.sets.size(); ++k) {
    RegimeSetResult& s = res.sets[k];
    const profile::RegimeSet& set = found[k];
    for (const profile::Regime& g : set.regimes) {
      const TargetResult& t = res.captures.targets.at(t_index++);
      const std::string dir = s.dir.empty() ? t.outcome.dir : fs::path(t.outcome.dir).filename().string();
      format::RegimeEntry e{dir, g.grid, g.block, g.cluster, g.dynamic_shared,
                            g.launches, g.time_ns, g.dispatch, g.share, t.outcome.captured, t.outcome.why};
      e.params = g.params;
      if (e.captured) {
        // The second run must have launched the kernel in the same order as the first.
        const auto& m = t.capture.manifest;
        const bool same = m.grid[0] == static_cast<uint32_t>(g.grid[0]) &&
                          m.grid[1] == static_cast<uint32_t>(g.grid[1]) &&
                          m.grid[2] == static_cast<uint32_t>(g.grid[2]) &&
                          m.block[0] == static_cast<uint32_t>(g.block[0]) &&
                          m.block[1] == static_cast<uint32_t>(g.block[1]) &&
                          m.block[2] == static_cast<uint32_t>(g.block[2]);
        if (!same) {
          e.captured = false;
          e.why = fmt::format("launch {} of the kernel had {} in the profiled run but grid {}x{}x{} block {}x{}x{} in "
                              "the captured one: the application launches it in another order from run to run",
                              g.dispatch, shape_text(e), m.grid[0], m.grid[1], m.grid[2], m.block[0], m.block[1],
                              m.block[2]);
        }
        // And with the same scalar arguments (the regime's parameter words). Words that
        // differ between the two runs only as padding or addresses do (params_mismatch) leave
        // the key, said in a note.
        std::vector<format::RegimeParam> unstable;
        const std::string differs =
            e.captured && !g.params.empty()
                ? profile::params_mismatch(g.params, m.params, t.capture.read(m.params_file, "parameter buffer"),
                                           &unstable)
                : "";
        for (const format::RegimeParam& u : unstable) {
          const auto same_word = [&](const format::RegimeParam& w) {
            return w.slot == u.slot && w.offset == u.offset && w.size == u.size;
          };
          const auto it = std::find_if(e.params.begin(), e.params.end(), same_word);
          if (it == e.params.end()) continue;
          res.notes.push_back(fmt::format("{}: {} in the profiled run, {} in the captured one: it differs between runs "
                                          "of the application ({}), so it is left out of this regime's key",
                                          e.dir, format::param_word_text(*it), format::param_word_text(u),
                                          !it->varies ? "it tells none of the kernel's regimes apart: uninitialized bytes?"
                                          : it->offset || u.size < 8
                                              ? "a field of a struct parameter the application left unset?"
                                              : "its upper four bytes: padding beside a 32-bit field, or an address"));
          e.params.erase(it);
        }
        if (!differs.empty()) {
          e.captured = false;
          e.why = fmt::format("launch {} of the kernel: {}; the application launches it in another order (or with "
                              "other arguments) from run to run",
                              g.dispatch, differs);
        }
      }
      s.index.regimes.push_back(std::move(e));
    }
    const fs::path set_dir = s.dir.empty() ? res.captures.out : res.captures.out / s.dir;
    format::write_regimes(set_dir, s.index);
    uint64_t captured = 0;
    for (const auto& e : s.index.regimes) captured += e.captured;
    listing.kernels.push_back({s.dir, s.index.mangled, s.index.demangled, s.index.pid, s.index.launches,
                               s.index.time_ns, s.index.app_time_ns, s.index.regimes.size(), captured});
  }
  if (!sel.flat()) format::write_regime_kernels(res.captures.out, listing);
  return res;
}

}  // namespace kerncap::extract
