#include "replay/timing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "replay/session.hpp"

namespace kerncap::replay {

Stats statistics(const std::vector<float>& ms) {
  Stats s;
  if (ms.empty()) return s;
  std::vector<double> v(ms.begin(), ms.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
  if (n > 1) {
    double sq = 0;
    for (double x : v) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(n - 1));
  }
  return s;
}

void check(const TimingOptions& o) {
  if (o.iterations < 1) usage_error("iterations must be at least 1");
  if (o.warmup < 0) usage_error("warmup must be >= 0");
  if (o.iterations > 10'000'000 || o.warmup > 10'000'000) usage_error("at most 10,000,000 iterations");
}

nlohmann::json Timing::to_json() const {
  return {{"method", method},   {"warmup", options.warmup}, {"iterations", options.iterations},
          {"restore_each", options.restore_each},
          {"median_ms", stats.median}, {"min_ms", stats.min},  {"max_ms", stats.max},
          {"mean_ms", stats.mean},     {"stddev_ms", stats.stddev}, {"times_ms", ms}};
}

Timing time_launches(Session& s, const TimingOptions& o, const LaunchFn& launch) {
  check(o);
  const LaunchFn run = launch ? launch : [&s](CUstream) { s.enqueue(); };
  Timing t;
  t.options = o;
  for (int i = 0; i < o.warmup; ++i) {
    if (o.restore_each) s.restore();
    run(s.stream());
    s.synchronize();
  }
  CUevent start = nullptr, stop = nullptr;
  KC_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  KC_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  struct Events {
    CUevent a, b;
    ~Events() {
      driver().cuEventDestroy(a);
      driver().cuEventDestroy(b);
    }
  } guard{start, stop};
  for (int i = 0; i < o.iterations; ++i) {
    if (o.restore_each) s.restore();
    KC_CU(cuEventRecord(start, s.stream()));
    run(s.stream());
    KC_CU(cuEventRecord(stop, s.stream()));
    s.synchronize();
    float ms = 0;
    KC_CU(cuEventElapsedTime(&ms, start, stop));
    t.ms.push_back(ms);
  }
  t.stats = statistics(t.ms);
  return t;
}

}  // namespace kerncap::replay
