#pragma once
// Timing a launch: the one implementation behind `kerncap replay`, kc_time and every
// reproducer. CUDA events bracket each launch on the session's stream; warm-up launches
// come first; with restore_each the captured memory is written back before every timed
// launch (kernels that consume their inputs, in-place updates).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda.h>
#include <nlohmann/json.hpp>

namespace kerncap::replay {

class Session;

struct TimingOptions {
  int warmup = 3;
  int iterations = 20;
  bool restore_each = false;
};

struct Stats {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
};
// Pure statistics of a sample (median of an even count is the mean of the middle two;
// stddev is the sample standard deviation, 0 for one value). Empty input gives zeros.
Stats statistics(const std::vector<float>& ms);

struct Timing {
  std::string method = "cuda-events";
  TimingOptions options;
  std::vector<float> ms;
  Stats stats;
  nlohmann::json to_json() const;
};

// Checks the options (Error(Usage) on iterations < 1 or warmup < 0).
void check(const TimingOptions& o);

// `launch` enqueues one launch on the given stream; empty = the session's own kernel.
using LaunchFn = std::function<void(CUstream)>;
Timing time_launches(Session& s, const TimingOptions& o, const LaunchFn& launch = {});

}  // namespace kerncap::replay
