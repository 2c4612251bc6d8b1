#include "profile/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "names/demangle.hpp"
#include "names/match.hpp"

namespace kerncap::profile {
namespace {

uint64_t duration(uint64_t start, uint64_t end) { return end > start ? end - start : 0; }

using Shape = std::tuple<std::array<int32_t, 3>, std::array<int32_t, 3>, int32_t, int32_t, uint32_t>;

struct Accumulator {
  std::vector<uint64_t> durations;  // the timed launches (all of them unless sampled)
  std::map<Shape, uint64_t> shapes;
  uint64_t calls = 0;                // every launch, timed or not
  bool estimated = false;
};

// For each name in one process, the names (ids) whose extract pattern it matches: the
// pattern is a kernel's mangled name, matched as a substring of either form of a name.
std::vector<std::vector<uint32_t>> pattern_matches(const std::vector<std::string>& mangled,
                                                   const std::vector<std::string>& demangled) {
  std::vector<std::vector<uint32_t>> out(mangled.size());
  for (size_t m = 0; m < mangled.size(); ++m) {
    const names::Matcher pattern(mangled[m], false);
    for (size_t n = 0; n < mangled.size(); ++n)
      if (pattern.matches(mangled[n], demangled[n])) out[n].push_back(static_cast<uint32_t>(m));
  }
  return out;
}

ProcessSummary summarize_process(const ProcessRecords& p) {
  ProcessSummary ps;
  ps.info = p.info;
  ps.file = p.file.string();
  ps.dropped = p.dropped;
  ps.complete = p.complete;
  ps.end_reason = p.end_reason;
  ps.errors = p.errors;
  std::set<uint32_t> used;
  for (const auto& k : p.kernels) {
    ++ps.kernels;
    ps.kernel_ns += duration(k.start_ns, k.end_ns);
    used.insert(k.device);
  }
  for (const auto& m : p.memops) {
    uint64_t d = duration(m.start_ns, m.end_ns);
    if (m.memset) {
      ++ps.memsets;
      ps.memset_ns += d;
      ps.memset_bytes += m.bytes;
    } else {
      ++ps.memcpys;
      ps.memcpy_ns += d;
      ps.memcpy_bytes += m.bytes;
    }
  }
  for (uint32_t id : used) {
    auto it = std::find_if(p.devices.begin(), p.devices.end(), [&](const DeviceInfo& d) { return d.id == id; });
    DeviceInfo d;
    d.id = id;
    ps.devices.push_back(it != p.devices.end() ? *it : d);
  }
  return ps;
}

void finish_stats(KernelStats& ks, Accumulator& acc) {
  auto& d = acc.durations;
  std::sort(d.begin(), d.end());
  ks.calls = acc.calls;
  ks.samples = d.size();
  ks.estimated = acc.estimated;
  if (d.empty()) return;
  ks.min_ns = d.front();
  ks.max_ns = d.back();
  double sum = 0;
  for (uint64_t v : d) sum += static_cast<double>(v);
  ks.avg_ns = sum / static_cast<double>(d.size());
  size_t mid = d.size() / 2;
  ks.median_ns = d.size() % 2 ? static_cast<double>(d[mid]) : (static_cast<double>(d[mid - 1]) + d[mid]) / 2.0;
  double var = 0;
  for (uint64_t v : d) var += (static_cast<double>(v) - ks.avg_ns) * (static_cast<double>(v) - ks.avg_ns);
  ks.stddev_ns = std::sqrt(var / static_cast<double>(d.size()));
  auto best = std::max_element(acc.shapes.begin(), acc.shapes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  std::tie(ks.grid, ks.block, ks.static_shared, ks.dynamic_shared, ks.registers) = best->first;
  ks.shapes = acc.shapes.size();
}

// A sampled process's launches in launch order: its runs (cuLaunchKernel & co., counted by
// the library) and the kernels of its graph launches (from their records), each entry
// `count` launches of one name. Benchmark launches are left out: extract does not count them.
struct Entry {
  uint32_t correlation = 0;
  uint64_t node = 0, start = 0;
  uint32_t name = 0;
  uint64_t count = 0;
  int64_t record = -1;  // the graph kernel's record
};

std::vector<Entry> sampled_order(const ProcessRecords& p) {
  std::vector<Entry> e;
  for (const auto& r : p.runs)
    if (!r.benchmark && r.count) e.push_back({r.first_correlation, 0, 0, r.name_id, r.count, -1});
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelRecord& k = p.kernels[i];
    if (k.graph_id && !k.device_launched && !k.benchmark)
      e.push_back({k.correlation, k.graph_node, k.start_ns, k.name_id, 1, static_cast<int64_t>(i)});
  }
  std::stable_sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
    if (a.correlation != b.correlation) return a.correlation < b.correlation;
    if (a.node != b.node) return a.node < b.node;
    return a.start < b.start;
  });
  return e;
}

// Walks the launch order, calling visit(entry, first) with the extract index of the entry's
// first launch under its own name's pattern.
template <typename Visit>
void walk_sampled(const ProcessRecords& p, const std::vector<std::string>& demangled, Visit visit) {
  const auto matches = pattern_matches(p.names, demangled);
  std::vector<uint64_t> counter(p.names.size(), 0);
  for (const Entry& e : sampled_order(p)) {
    for (uint32_t m : matches[e.name]) {
      if (m == e.name) visit(e, counter[m]);
      counter[m] += e.count;
    }
  }
}

}  // namespace

// Launch order is correlation-id order: CUPTI numbers API calls as they are made. The
// kernels of one graph launch share its correlation id; extract counts them in the order
// of their graph nodes, which is node-id order when the graph's edges follow its creation
// order (stream capture, nodes added with their dependencies).
std::vector<int64_t> dispatch_indices(const ProcessRecords& p, const std::vector<std::string>& demangled) {
  std::vector<int64_t> out(p.kernels.size(), -1);
  if (p.sample_period) {
    walk_sampled(p, demangled, [&](const Entry& e, uint64_t first) {
      if (e.record >= 0) out[static_cast<size_t>(e.record)] = static_cast<int64_t>(first);
    });
    return out;
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < p.kernels.size(); ++i)
    if (!p.kernels[i].device_launched && !p.kernels[i].benchmark) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const KernelRecord &ka = p.kernels[a], &kb = p.kernels[b];
    if (ka.correlation != kb.correlation) return ka.correlation < kb.correlation;
    if (ka.graph_id && kb.graph_id && ka.graph_node != kb.graph_node) return ka.graph_node < kb.graph_node;
    return ka.start_ns < kb.start_ns;
  });
  auto matches = pattern_matches(p.names, demangled);
  std::vector<uint64_t> counter(p.names.size(), 0);
  for (size_t i : order) {
    const uint32_t n = p.kernels[i].name_id;
    for (uint32_t m : matches[n]) {
      if (m == n) out[i] = static_cast<int64_t>(counter[m]);
      ++counter[m];
    }
  }
  return out;
}

namespace {

void add_rank_device(std::vector<RankDevice>& out, const ProcessInfo& p, uint32_t device, uint64_t ns,
                     uint64_t launches = 1) {
  auto it = std::find_if(out.begin(), out.end(), [&](const RankDevice& r) { return r.rank == p.rank && r.device == device; });
  if (it == out.end()) it = out.insert(out.end(), RankDevice{p.rank, device, 0, 0, {}});
  it->launches += launches;
  it->kernel_ns += ns;
  if (std::find(it->pids.begin(), it->pids.end(), p.pid) == it->pids.end()) it->pids.push_back(p.pid);
}

uint64_t scaled(uint64_t v, uint64_t calls, uint64_t samples) {
  return samples ? static_cast<uint64_t>(std::llround(static_cast<double>(v) * static_cast<double>(calls) /
                                                      static_cast<double>(samples)))
                 : 0;
}

// A sampled process: calls and extract's indices from the counted launches, times from the
// timed ones, each kernel's total scaled up from its timed mean when not all were timed.
void add_sampled(Summary& s, ProcessSummary& ps, const ProcessRecords& p, const std::vector<size_t>& global,
                 const std::vector<std::string>& demangled, std::vector<Accumulator>& accs, bool& any) {
  const size_t names = p.names.size();
  std::vector<KernelInProcess> per_name(names);
  for (auto& kip : per_name) {
    kip.pid = p.info.pid;
    kip.rank = p.info.rank;
  }
  for (const auto& r : p.runs) {
    per_name[r.name_id].calls += r.count;
    if (r.benchmark) per_name[r.name_id].benchmark_calls += r.count;
  }
  walk_sampled(p, demangled, [&](const Entry& e, uint64_t first) {
    for (uint64_t i = 0; i < e.count; ++i) per_name[e.name].dispatch.push_back(first + i);
  });
  std::vector<uint64_t> samples(names, 0), sum(names, 0);
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> by_device;  // (name, device) -> timed, ns
  for (const KernelRecord& k : p.kernels) {
    const uint64_t d = duration(k.start_ns, k.end_ns);
    KernelInProcess& kip = per_name[k.name_id];
    if (k.graph_id || k.device_launched) {  // not in the runs: their records count them
      ++kip.calls;
      ++kip.graph_calls;
      if (k.benchmark) ++kip.benchmark_calls;
    }
    ++samples[k.name_id];
    sum[k.name_id] += d;
    auto& bd = by_device[{k.name_id, k.device}];
    ++bd.first;
    bd.second += d;
    Accumulator& acc = accs[global[k.name_id]];
    acc.durations.push_back(d);
    ++acc.shapes[Shape{k.grid, k.block, k.static_shared, k.dynamic_shared, k.registers}];
    if (std::find(kip.devices.begin(), kip.devices.end(), k.device) == kip.devices.end()) kip.devices.push_back(k.device);
    s.first_ns = any ? std::min(s.first_ns, k.start_ns) : k.start_ns;
    s.last_ns = any ? std::max(s.last_ns, k.end_ns) : k.end_ns;
    any = true;
  }
  ps.kernels = ps.kernel_ns = 0;
  for (size_t n = 0; n < names; ++n) {
    KernelInProcess& kip = per_name[n];
    kip.calls = std::max(kip.calls, samples[n]);  // a launch the callback missed still ran
    const bool estimated = samples[n] < kip.calls;
    const uint64_t total = estimated ? scaled(sum[n], kip.calls, samples[n]) : sum[n];
    KernelStats& ks = s.kernels[global[n]];
    Accumulator& acc = accs[global[n]];
    acc.calls += kip.calls;
    acc.estimated = acc.estimated || estimated;
    s.estimated = s.estimated || estimated;
    ks.total_ns += total;
    ks.benchmark_calls += kip.benchmark_calls;
    s.total_kernel_ns += total;
    s.launches += kip.calls;
    ps.kernels += kip.calls;
    ps.kernel_ns += total;
    std::sort(kip.devices.begin(), kip.devices.end());
    if (kip.calls) ks.processes.push_back(std::move(kip));
  }
  for (const auto& [key, v] : by_device) {
    const uint64_t calls = per_name[key.first].calls, timed = samples[key.first];
    add_rank_device(s.ranks, p.info, key.second, scaled(v.second, calls, timed), scaled(v.first, calls, timed));
  }
}

}  // namespace

Summary aggregate(const std::vector<ProcessRecords>& processes) {
  Summary s;
  std::unordered_map<std::string, size_t> index;  // mangled name -> s.kernels
  std::vector<Accumulator> accs;
  auto kernel_index = [&](const std::string& mangled) {
    auto [it, inserted] = index.try_emplace(mangled, s.kernels.size());
    if (inserted) {
      KernelStats ks;
      ks.mangled = mangled;
      ks.demangled = names::demangle(mangled);
      ks.cls = names::classify(ks.mangled, ks.demangled);
      s.kernels.push_back(std::move(ks));
      accs.emplace_back();
    }
    return it->second;
  };
  bool any = false;
  for (const auto& p : processes) {
    s.processes.push_back(summarize_process(p));
    std::vector<size_t> global(p.names.size());
    std::vector<std::string> demangled(p.names.size());
    for (size_t i = 0; i < p.names.size(); ++i) {
      global[i] = kernel_index(p.names[i]);
      demangled[i] = s.kernels[global[i]].demangled;
    }
    if (p.sample_period) {
      ProcessSummary& ps = s.processes.back();
      ps.sample_period = p.sample_period;
      ps.timed = p.kernels.size();
      add_sampled(s, ps, p, global, demangled, accs, any);
      continue;
    }
    const std::vector<int64_t> dispatch = dispatch_indices(p, demangled);
    std::vector<KernelInProcess> per_name(p.names.size());
    for (auto& kip : per_name) {
      kip.pid = p.info.pid;
      kip.rank = p.info.rank;
    }
    for (size_t r = 0; r < p.kernels.size(); ++r) {
      const KernelRecord& k = p.kernels[r];
      if (dispatch[r] >= 0) per_name[k.name_id].dispatch.push_back(static_cast<uint64_t>(dispatch[r]));
      uint64_t d = duration(k.start_ns, k.end_ns);
      Accumulator& acc = accs[global[k.name_id]];
      acc.durations.push_back(d);
      ++acc.calls;
      ++acc.shapes[Shape{k.grid, k.block, k.static_shared, k.dynamic_shared, k.registers}];
      KernelInProcess& kip = per_name[k.name_id];
      ++kip.calls;
      if (std::find(kip.devices.begin(), kip.devices.end(), k.device) == kip.devices.end()) kip.devices.push_back(k.device);
      add_rank_device(s.ranks, p.info, k.device, d);
      if (k.graph_id || k.device_launched) ++kip.graph_calls;
      if (k.benchmark) {
        ++kip.benchmark_calls;
        ++s.kernels[global[k.name_id]].benchmark_calls;
      }
      s.kernels[global[k.name_id]].total_ns += d;
      s.total_kernel_ns += d;
      ++s.launches;
      s.first_ns = any ? std::min(s.first_ns, k.start_ns) : k.start_ns;
      s.last_ns = any ? std::max(s.last_ns, k.end_ns) : k.end_ns;
      any = true;
    }
    for (auto& kip : per_name) {
      std::sort(kip.dispatch.begin(), kip.dispatch.end());  // = launch order
      std::sort(kip.devices.begin(), kip.devices.end());
    }
    for (size_t i = 0; i < per_name.size(); ++i)
      if (per_name[i].calls) s.kernels[global[i]].processes.push_back(std::move(per_name[i]));
  }
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    finish_stats(s.kernels[i], accs[i]);
    s.kernels[i].percent =
        s.total_kernel_ns ? 100.0 * static_cast<double>(s.kernels[i].total_ns) / static_cast<double>(s.total_kernel_ns)
                          : 0.0;
  }
  // A name listed by a process that never ran it (cannot happen with our writer) stays out.
  std::erase_if(s.kernels, [](const KernelStats& k) { return k.calls == 0; });
  std::sort(s.ranks.begin(), s.ranks.end(), [](const RankDevice& a, const RankDevice& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.device < b.device;
  });
  std::sort(s.kernels.begin(), s.kernels.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.mangled < b.mangled;
  });
  return s;
}

}  // namespace kerncap::profile
