#include "capture/in_app.hpp"

#include <algorithm>

namespace kerncap::capture {

void InAppTimes::add(const char* name, const LaunchShape& shape, uint64_t duration_ns) {
  if (!name) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, fresh] = kernels_.try_emplace(name);
  Kernel& k = it->second;
  if (fresh) k.name = name;
  auto s = std::find_if(k.shapes.begin(), k.shapes.end(), [&](const Shape& x) { return x.shape == shape; });
  if (s == k.shapes.end()) {
    if (k.shapes.size() < kShapes) {
      k.shapes.emplace_back();
      s = k.shapes.end() - 1;
    } else {  // a kernel launched in many shapes: forget the one launched longest ago
      s = std::min_element(k.shapes.begin(), k.shapes.end(),
                           [](const Shape& a, const Shape& b) { return a.last_use < b.last_use; });
      *s = Shape{};
    }
    s->shape = shape;
  }
  s->last_use = ++clock_;
  if (s->seen++ == 0) {
    s->first_ns = duration_ns;
  } else if (s->ring.size() < kKeep) {
    s->ring.push_back(duration_ns);
  } else {
    s->ring[s->next] = duration_ns;
    s->next = (s->next + 1) % kKeep;
  }
}

std::optional<InAppTime> InAppTimes::time(const std::string& mangled, const LaunchShape& shape) const {
  std::vector<uint64_t> later, first;
  uint64_t launches = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Several name strings may hold the same text (the kernel loaded in two modules).
    for (const auto& [ptr, k] : kernels_) {
      if (k.name != mangled) continue;
      for (const auto& s : k.shapes) {
        if (!(s.shape == shape)) continue;
        launches += s.seen;
        first.push_back(s.first_ns);
        later.insert(later.end(), s.ring.begin(), s.ring.end());
      }
    }
  }
  std::vector<uint64_t>& v = later.empty() ? first : later;
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  InAppTime t;
  t.median_ns = n % 2 ? static_cast<double>(v[n / 2])
                      : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
  t.samples = n;
  t.launches = launches;
  return t;
}

void add_kernel_record(InAppTimes& times, const CUpti_ActivityKernel10& k) {
  if (k.end <= k.start) return;
  LaunchShape shape;
  shape.grid = {uint32_t(k.gridX), uint32_t(k.gridY), uint32_t(k.gridZ)};
  shape.block = {uint32_t(k.blockX), uint32_t(k.blockY), uint32_t(k.blockZ)};
  shape.dynamic_shared = uint32_t(k.dynamicSharedMemory);
  times.add(k.name, shape, k.end - k.start);
}

InAppTimes& in_app_times() {
  static InAppTimes* t = new InAppTimes;  // leaked: callbacks may fire during exit
  return *t;
}

}  // namespace kerncap::capture
