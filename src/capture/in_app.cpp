#include "capture/in_app.hpp"

#include <algorithm>

namespace kerncap::capture {

void InAppTimes::add(const char* name, const std::array<uint32_t, 3>& grid, uint64_t duration_ns) {
  if (!name) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = kernels_.try_emplace(name);
  Kernel& k = it->second;
  if (fresh) k.name = name;
  if (k.ring.size() < kKeep) {
    k.ring.push_back({grid, duration_ns});
  } else {
    k.ring[k.next] = {grid, duration_ns};
    k.next = (k.next + 1) % kKeep;
  }
}

std::optional<double> InAppTimes::median_ns(const std::string& mangled, const std::array<uint32_t, 3>& grid) const {
  std::vector<uint64_t> v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [ptr, k] : kernels_)
      if (k.name == mangled)
        for (const auto& l : k.ring)
          if (l.grid == grid) v.push_back(l.ns);
  }
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? static_cast<double>(v[n / 2]) : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
}

InAppTimes& in_app_times() {
  static InAppTimes* t = new InAppTimes;  // leaked: callbacks may fire during exit
  return *t;
}

}  // namespace kerncap::capture
