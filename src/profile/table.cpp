#include "profile/table.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "common/error.hpp"
#include "names/classify.hpp"
#include "names/match.hpp"
#include "names/shorten.hpp"

namespace kerncap::profile {
namespace {

// Fixed columns: rank, calls, total ms, avg us, median us, %GPU, kind, category.
constexpr size_t kFixed = 4 + 9 + 11 + 10 + 10 + 7 + 12 + 12;
constexpr size_t kMinName = 24;

names::Matcher compile_filter(const std::string& f) {
  try {
    return names::Matcher(f, true);
  } catch (const std::regex_error& e) {
    usage_error(fmt::format("--filter '{}' is not a valid regular expression: {}", f, e.what()));
  }
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  for (; v >= 1024 && u + 1 < std::size(units); ++u) v /= 1024;
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string command_of(const ProcessInfo& p) {
  std::string c;
  for (const auto& a : p.cmdline) {
    if (!c.empty()) c += ' ';
    c += a;
  }
  if (c.empty()) c = p.exe;
  return c.size() > 60 ? c.substr(0, 57) + "..." : c;
}

}  // namespace

std::string format_table(const Summary& s, const TableOptions& opt) {
  std::optional<names::Matcher> filter;
  if (!opt.filter.empty()) filter = compile_filter(opt.filter);
  const size_t name_w = opt.width > kFixed + kMinName ? opt.width - kFixed : kMinName;

  std::string out = fmt::format("{:>3} {:<{}} {:>8} {:>10} {:>9} {:>9} {:>6}  {:<11} {}\n", "#", "Kernel", name_w,
                                "Calls", "Total ms", "Avg us", "Med us", "%GPU", "Kind", "Category");
  size_t shown = 0, matched = 0, in_graphs = 0, benchmarked = 0, untimed = 0;
  double shown_pct = 0;
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const KernelStats& k = s.kernels[i];
    if (filter && !filter->matches(k.mangled, k.demangled)) continue;
    ++matched;
    if (opt.top && shown >= opt.top) continue;
    ++shown;
    shown_pct += k.percent;
    bool in_graph = false;
    for (const auto& kp : k.processes) in_graph = in_graph || kp.graph_calls > 0;
    in_graphs += in_graph;
    benchmarked += k.benchmark_calls > 0;
    // Sampled timing: "~" marks an estimated total, "?" a kernel none of whose launches was timed.
    const std::string total = !k.estimated       ? fmt::format("{:.3f}", static_cast<double>(k.total_ns) / 1e6)
                              : k.samples == 0   ? std::string("?")
                                                 : fmt::format("~{:.3f}", static_cast<double>(k.total_ns) / 1e6);
    untimed += k.estimated && k.samples == 0;
    out += fmt::format("{:>3} {:<{}} {:>8} {:>10} {:>9.2f} {:>9.2f} {:>6.2f}  {:<11} {}{}{}\n", i + 1,
                       names::shorten(k.demangled, name_w), name_w, k.calls, total,
                       k.avg_ns / 1e3, k.median_ns / 1e3, k.percent, names::to_string(k.cls.kind),
                       names::to_string(k.cls.category), in_graph ? " [graph]" : "",
                       k.benchmark_calls ? fmt::format(" [bench {}]", k.benchmark_calls) : std::string());
  }
  if (in_graphs)
    out += "    [graph]: ran (also) inside CUDA graph launches; each graph kernel node counts as a launch for "
           "`extract --dispatch`\n";
  if (benchmarked)
    out += "    [bench N]: N of its calls were benchmark launches (autotuners, Inductor's and Triton's benchmarking); "
           "`extract --dispatch` does not count them\n";
  if (s.estimated) {
    uint64_t timed = 0;
    uint32_t period = 0;
    for (const auto& p : s.processes) {
      timed += p.sample_period ? p.timed : p.kernels;
      period = std::max(period, p.sample_period);
    }
    out += fmt::format("    ~: an estimate (sampled timing, --sample {}: {} of the {} launches were timed): calls and "
                       "`extract --dispatch` indices are exact; the total is calls x the mean of the timed launches, "
                       "and Avg/Med and %GPU are over those\n",
                       period, timed, s.launches);
    if (untimed) out += "    ?: none of its launches fell in a timed window (its time is unknown, counted as 0)\n";
  }
  if (filter && matched == 0) out += fmt::format("    (no kernel name matches --filter '{}')\n", opt.filter);
  out += fmt::format("\nShown: {} of {} kernels{}, {:.2f}% of GPU kernel time", shown, s.kernels.size(),
                     filter ? fmt::format(" ({} match the filter)", matched) : std::string(), shown_pct);
  if (shown < s.kernels.size()) out += fmt::format(" (the rest: {:.2f}%)", 100.0 - shown_pct);
  out += fmt::format("\nTotal: {} launches, {}{:.3f} ms of kernel time in {} process{}\n", s.launches,
                     s.estimated ? "~" : "", static_cast<double>(s.total_kernel_ns) / 1e6, s.processes.size(),
                     s.processes.size() == 1 ? "" : "es");
  uint64_t mc = 0, mc_ns = 0, mc_b = 0, ms = 0, ms_ns = 0;
  for (const auto& p : s.processes) {
    mc += p.memcpys, mc_ns += p.memcpy_ns, mc_b += p.memcpy_bytes;
    ms += p.memsets, ms_ns += p.memset_ns;
  }
  // Sampled timing records copies and fills in the timed windows only: those are counts of a sample.
  const bool sampled = std::any_of(s.processes.begin(), s.processes.end(), [](const ProcessSummary& p) { return p.sample_period != 0; });
  if (mc || ms)
    out += fmt::format("Not in the table{}: {} memcpy ({:.3f} ms, {}), {} memset ({:.3f} ms)\n",
                       sampled ? " (recorded in the timed windows only)" : "", mc, static_cast<double>(mc_ns) / 1e6,
                       human_bytes(mc_b), ms, static_cast<double>(ms_ns) / 1e6);
  return out;
}

std::string format_processes(const Summary& s) {
  std::string out;
  for (const auto& p : s.processes) {
    std::string devs;
    for (const auto& d : p.devices) {
      if (!devs.empty()) devs += ", ";
      devs += d.name.empty() ? fmt::format("GPU {}", d.id) : fmt::format("GPU {} ({})", d.id, d.name);
    }
    const std::string rank = p.info.rank >= 0 ? fmt::format("rank {}", p.info.rank) : "";
    out += fmt::format("  pid {:<8} {:<8} {:<60} {:>8} kernels  {}\n", p.info.pid, rank, command_of(p.info), p.kernels,
                       devs.empty() ? "-" : devs);
    if (p.info.forked_from)
      out += fmt::format("      forked from pid {} without exec (CUDA cannot be used there)\n", p.info.forked_from);
    for (const auto& e : p.errors) out += fmt::format("      error: {}\n", e.message);
    if (!p.complete)
      out += "      incomplete: the process ended without flushing its records (crashed, was killed, or "
             "called _exit); the kernels of its last moments are missing\n";
    if (p.sample_period)
      out += fmt::format("      sampled timing (--sample {}): {} of its {} launches timed\n", p.sample_period, p.timed,
                         p.kernels);
    if (p.dropped)
      out += fmt::format("      {} records were dropped by CUPTI (buffers full); totals are low\n", p.dropped);
  }
  return out;
}

std::string format_ranks(const Summary& s) {
  if (s.ranks.size() < 2 && s.processes.size() < 2) return "";
  std::string out = fmt::format("{:>6} {:>6} {:>10} {:>12} {:>6}  {}\n", "Rank", "Device", "Launches", "Kernel ms",
                                "%GPU", "pids");
  for (const auto& r : s.ranks) {
    std::string pids;
    for (int64_t p : r.pids) pids += (pids.empty() ? "" : " ") + std::to_string(p);
    const double pct = s.total_kernel_ns ? 100.0 * static_cast<double>(r.kernel_ns) / static_cast<double>(s.total_kernel_ns) : 0;
    out += fmt::format("{:>6} {:>6} {:>10} {:>12.3f} {:>6.2f}  {}\n", r.rank >= 0 ? std::to_string(r.rank) : "-",
                       r.device, r.launches, static_cast<double>(r.kernel_ns) / 1e6, pct, pids);
  }
  return out;
}

}  // namespace kerncap::profile
