#include "extract/regime_run.hpp"

#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/profile_run.hpp"
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

RegimeResult run_regimes(const Request& r, size_t max) {
  if (!r.targets.empty()) usage_error("--regimes takes one kernel (KERNEL), not --kernel/--top targets");
  if (r.kernel.empty()) usage_error("--regimes needs the kernel: kerncap extract KERNEL --regimes -o OUT -- APP");
  if (max == 0 || max > format::kMaxRegimes)
    usage_error(fmt::format("--max-regimes {}: expected 1..{}", max, format::kMaxRegimes));
  check_request(r);
  names::Matcher pattern = [&] {
    try {
      return names::Matcher(r.kernel, r.regex);
    } catch (const std::regex_error& e) {
      usage_error(fmt::format("--regex '{}': {}", r.kernel, e.what()));
    }
  }();

  // 1. The shapes: a profiled run (every launch timed).
  RegimeResult res;
  progress(r, "regimes: run 1 of 2, profiling every launch of the application to find the kernel's launch shapes");
  const AppCommand app{r.cmd, r.argv};
  std::vector<format::ProcessRecords> records;
  {
    RecordsDir dir("");
    ProfiledRun how;
    how.verbose = r.verbose;
    how.sample = 1;
    // The kernel named gets parameter signatures (a regime is a shape and its scalar arguments).
    how.params.push_back({r.kernel, r.regex ? format::MatchKind::Regex : format::MatchKind::Substring});
    const AppExit exit = run_profiled(app, dir.path(), how);
    records = format::read_records(dir.path());
    if (!(exit.exited && exit.code == 0))
      res.notes.push_back(fmt::format("the profiled run of the application {}", exit.describe()));
  }
  std::vector<std::string> others;
  const std::string mangled = pick_kernel(records, pattern, &others);
  if (mangled.empty())
    input_error(fmt::format("no launched kernel matches '{}' in the profiled run{}", r.kernel,
                            records.empty() ? " (no process recorded a kernel)" : ""));
  if (!others.empty())
    res.notes.push_back(fmt::format("'{}' also matches {} other kernel(s) ({}{}); the regimes are of {}, the one with "
                                    "the most GPU time (name another with a longer pattern)",
                                    r.kernel, others.size(), names::demangle(others[0]),
                                    others.size() > 1 ? ", ..." : "", names::demangle(mangled)));
  const profile::RegimeSet set = profile::find_regimes(records, mangled, max);
  if (set.regimes.empty()) input_error(fmt::format("'{}' was launched only from the device or in benchmarks", r.kernel));
  if (set.other_processes)
    res.notes.push_back(fmt::format("{} other process(es) launched it too; the regimes are those of process {}",
                                    set.other_processes, set.pid));
  if (set.dropped)
    res.notes.push_back(fmt::format("{} more regime(s) ({} launches, {:.1f}% of its GPU time) beyond --max-regimes {} "
                                    "are not captured",
                                    set.dropped, set.dropped_launches,
                                    set.time_ns ? 100.0 * static_cast<double>(set.dropped_ns) / set.time_ns : 0.0, max));
  for (const std::string& note : profile::signature_notes(set)) res.notes.push_back(note);

  format::RegimesIndex& idx = res.index;
  idx.mangled = mangled;
  idx.demangled = names::demangle(mangled);
  idx.application = r.cmd.empty() ? fmt::format("{}", fmt::join(r.argv, " ")) : r.cmd;
  idx.pid = set.pid;
  idx.launches = set.launches;
  idx.time_ns = set.time_ns;
  idx.app_time_ns = set.app_time_ns;
  idx.uncounted = set.uncounted;
  idx.dropped_regimes = set.dropped;
  idx.dropped_launches = set.dropped_launches;
  idx.dropped_ns = set.dropped_ns;

  // 2. One capture per regime: its first launch, by exact name.
  Request run = r;
  run.kernel.clear();
  run.regex = false;
  for (const profile::Regime& g : set.regimes)
    run.targets.push_back({mangled, format::MatchKind::Exact, g.dispatch, idx.demangled});
  progress(r, fmt::format("regimes: {} launch shape(s) of {} over {} launches; run 2 of 2 captures the first launch of "
                          "each",
                          set.regimes.size(), idx.demangled, set.launches));
  res.captures = run_captures(run);
  for (size_t i = 0; i < set.regimes.size(); ++i) {
    const profile::Regime& g = set.regimes[i];
    const TargetResult& t = res.captures.targets.at(i);
    format::RegimeEntry e{t.outcome.dir, g.grid, g.block, g.cluster, g.dynamic_shared, g.launches, g.time_ns,
                          g.dispatch,    g.share, t.outcome.captured, t.outcome.why};
    e.params = g.params;
    if (e.captured) {
      // The second run must have launched the kernel in the same order as the first.
      const auto& m = t.capture.manifest;
      const bool same = m.grid[0] == static_cast<uint32_t>(g.grid[0]) && m.grid[1] == static_cast<uint32_t>(g.grid[1]) &&
                        m.grid[2] == static_cast<uint32_t>(g.grid[2]) && m.block[0] == static_cast<uint32_t>(g.block[0]) &&
                        m.block[1] == static_cast<uint32_t>(g.block[1]) && m.block[2] == static_cast<uint32_t>(g.block[2]);
      if (!same) {
        e.captured = false;
        e.why = fmt::format("launch {} of the kernel had {} in the profiled run but grid {}x{}x{} block {}x{}x{} in the "
                            "captured one: the application launches it in another order from run to run",
                            g.dispatch, shape_text(e), m.grid[0], m.grid[1], m.grid[2], m.block[0], m.block[1],
                            m.block[2]);
      }
      // And with the same scalar arguments (the regime's parameter words).
      const std::string differs =
          e.captured && !g.params.empty()
              ? profile::params_mismatch(g.params, m.params, t.capture.read(m.params_file, "parameter buffer"))
              : "";
      if (!differs.empty()) {
        e.captured = false;
        e.why = fmt::format("launch {} of the kernel: {}; the application launches it in another order (or with "
                            "other arguments) from run to run",
                            g.dispatch, differs);
      }
    }
    idx.regimes.push_back(std::move(e));
  }
  format::write_regimes(res.captures.out, idx);
  return res;
}

}  // namespace kerncap::extract
