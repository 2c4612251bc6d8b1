#include "profile/regimes.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace kerncap::profile {
namespace {

using Key = std::tuple<std::array<int32_t, 3>, std::array<int32_t, 3>, std::array<uint32_t, 3>, int32_t>;

uint64_t duration(const format::KernelRecord& k) { return k.end_ns > k.start_ns ? k.end_ns - k.start_ns : 0; }

}  // namespace

RegimeSet find_regimes(const std::vector<format::ProcessRecords>& processes, const std::string& mangled, size_t max) {
  RegimeSet out;
  out.mangled = mangled;
  const format::ProcessRecords* chosen = nullptr;
  uint32_t id = 0;
  for (const auto& p : processes) {
    const auto it = std::find(p.names.begin(), p.names.end(), mangled);
    if (it == p.names.end()) continue;
    const auto n = static_cast<uint32_t>(it - p.names.begin());
    const bool launched = std::any_of(p.kernels.begin(), p.kernels.end(), [&](const format::KernelRecord& k) {
      return k.name_id == n && !k.device_launched && !k.benchmark;
    });
    if (!launched) continue;
    if (chosen) {
      ++out.other_processes;
      continue;
    }
    chosen = &p;
    id = n;
  }
  if (!chosen) return out;
  const format::ProcessRecords& p = *chosen;
  out.pid = p.info.pid;

  // Launch order as extract counts it (aggregate.cpp's dispatch_indices): correlation id,
  // then graph node within one graph launch.
  std::vector<size_t> order;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const format::KernelRecord& k = p.kernels[i];
    out.app_time_ns += duration(k);
    if (k.name_id != id) continue;
    if (k.device_launched || k.benchmark) {
      ++out.uncounted;
      continue;
    }
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const format::KernelRecord &ka = p.kernels[a], &kb = p.kernels[b];
    if (ka.correlation != kb.correlation) return ka.correlation < kb.correlation;
    if (ka.graph_id && kb.graph_id && ka.graph_node != kb.graph_node) return ka.graph_node < kb.graph_node;
    return ka.start_ns < kb.start_ns;
  });

  std::map<Key, size_t> index;
  std::vector<Regime> all;
  for (size_t d = 0; d < order.size(); ++d) {
    const format::KernelRecord& k = p.kernels[order[d]];
    const Key key{k.grid, k.block, k.cluster, k.dynamic_shared};
    auto [it, fresh] = index.emplace(key, all.size());
    if (fresh) {
      Regime r;
      r.grid = k.grid;
      r.block = k.block;
      r.cluster = k.cluster;
      r.dynamic_shared = k.dynamic_shared;
      r.dispatch = d;
      r.first_ns = k.start_ns;
      all.push_back(r);
    }
    Regime& r = all[it->second];
    ++r.launches;
    r.time_ns += duration(k);
    ++out.launches;
    out.time_ns += duration(k);
  }
  for (Regime& r : all) r.share = out.time_ns ? static_cast<double>(r.time_ns) / static_cast<double>(out.time_ns) : 0;
  // Largest share first; equal shares in the order the application met them.
  std::stable_sort(all.begin(), all.end(), [](const Regime& a, const Regime& b) { return a.time_ns > b.time_ns; });
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < max) {
      out.regimes.push_back(all[i]);
      continue;
    }
    ++out.dropped;
    out.dropped_launches += all[i].launches;
    out.dropped_ns += all[i].time_ns;
  }
  return out;
}

}  // namespace kerncap::profile
