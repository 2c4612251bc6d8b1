#include "capture/in_app.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kerncap::capture {

uint64_t InAppTimes::idle_before(uint64_t start_ns, uint64_t end_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t idle = last_end_ns_ && start_ns > last_end_ns_ ? start_ns - last_end_ns_ : 0;
  last_end_ns_ = std::max(last_end_ns_, end_ns);
  return idle;
}

void InAppTimes::add(const char* name, const LaunchShape& shape, uint64_t duration_ns, uint64_t idle_ns) {
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
  const Launch l{duration_ns, idle_ns, busy_ns_ - s->busy_mark};
  busy_ns_ += duration_ns;
  s->busy_mark = busy_ns_;
  if (s->seen++ == 0) {
    s->first_ns = duration_ns;
  } else if (s->ring.size() < kKeep) {
    s->ring.push_back(l);
  } else {
    s->ring[s->next] = l;
    s->next = (s->next + 1) % kKeep;
  }
}

namespace {

double median_of(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? static_cast<double>(v[n / 2]) : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
}

}  // namespace

std::optional<InAppTime> InAppTimes::time(const std::string& mangled, const LaunchShape& shape,
                                          bool leave_out_latest) const {
  std::vector<uint64_t> later, first, idle, between;
  uint64_t launches = 0, latest = 0, latest_use = 0;
  constexpr size_t kNone = SIZE_MAX;
  size_t latest_at = kNone;  // where the latest launch is in `later` (kNone: it was a first launch)
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Several name strings may hold the same text (the kernel loaded in two modules).
    for (const auto& [ptr, k] : kernels_) {
      if (k.name != mangled) continue;
      for (const auto& s : k.shapes) {
        if (!(s.shape == shape)) continue;
        launches += s.seen;
        first.push_back(s.first_ns);
        if (s.last_use >= latest_use) {
          latest_use = s.last_use;
          latest_at = kNone;
          latest = s.first_ns;
          if (!s.ring.empty()) {
            const size_t i = (s.next + s.ring.size() - 1) % s.ring.size();
            latest_at = later.size() + i;
            latest = s.ring[i].ns;
          }
        }
        for (const Launch& l : s.ring) {
          later.push_back(l.ns);
          idle.push_back(l.idle_ns);
          between.push_back(l.between_ns);
        }
      }
    }
  }
  if (leave_out_latest && latest_at != kNone && later.size() > 1) {
    const auto at = static_cast<std::ptrdiff_t>(latest_at);
    later.erase(later.begin() + at);
    idle.erase(idle.begin() + at);
    between.erase(between.begin() + at);
  }
  const std::vector<uint64_t>& v = later.empty() ? first : later;
  if (v.empty()) return std::nullopt;
  InAppTime t;
  t.median_ns = median_of(v);
  t.samples = v.size();
  t.launches = launches;
  t.min_ns = *std::min_element(v.begin(), v.end());
  t.max_ns = *std::max_element(v.begin(), v.end());
  t.first_ns = first.front();
  t.latest_ns = latest;
  t.median_idle_ns = median_of(idle);
  t.median_between_ns = median_of(between);
  return t;
}

void add_kernel_record(InAppTimes& times, const CUpti_ActivityKernel10& k) {
  // kerncap's own kernels (the snapshot's scans, at the target) are not the application's work.
  if (k.end <= k.start || (k.name && std::strncmp(k.name, "kerncap_", 8) == 0)) return;
  LaunchShape shape;
  shape.grid = {uint32_t(k.gridX), uint32_t(k.gridY), uint32_t(k.gridZ)};
  shape.block = {uint32_t(k.blockX), uint32_t(k.blockY), uint32_t(k.blockZ)};
  shape.dynamic_shared = uint32_t(k.dynamicSharedMemory);
  times.add(k.name, shape, k.end - k.start, times.idle_before(k.start, k.end));
}

InAppTimes& in_app_times() {
  static InAppTimes* t = new InAppTimes;  // leaked: callbacks may fire during exit
  return *t;
}

}  // namespace kerncap::capture
