#pragma once
// A variant's speed-up over the captured image (`validate --min-speedup X`, OUT/kerncap.toml
// [timing] min_speedup): the judge times both in its session, interleaved
// (Evaluator::measure_speedup_here); speed-up = captured median / variant median.
#include <string>

#include <nlohmann/json.hpp>

#include "replay/session.hpp"
#include "replay/timing.hpp"

namespace kerncap::replay {

struct SpeedupCheck {
  double min_speedup = 0;
  Stats captured, variant;
  double speedup = 0;  // 0 when the variant's median is 0
  std::string cache;   // the L2 state both images were timed in, and why (--cache auto's choice)
  // Both medians positive: a timing that gave no samples is never a speed-up (nor a pass).
  bool measured() const { return captured.median > 0 && variant.median > 0; }
  bool pass() const { return measured() && speedup >= min_speedup; }
  // "Speed-up: PASS (x1.42 >= x1.10: captured 0.1200 ms, variant 0.0845 ms, median of 20)".
  std::string line(int iterations) const;
  nlohmann::json to_json() const;
};

// Pure: the verdict from two timings. min_speedup 0: measured only (it passes). Throws
// Error(Usage) when min_speedup is negative or not finite.
SpeedupCheck judge_speedup(const Stats& captured, const Stats& variant, double min_speedup);

// Pure: the two images' times in the application's L2 state, from each image timed warm and
// cold. a = where the application's own time of the captured image (in_app_ns) lies between
// its warm and cold medians, clamped to [0, 1] (0 when cold is not slower); each image's
// median is then warm + a x (cold - warm), its spread the larger of the two. `why` says a and
// the four medians. A model, stated as one: the replay cannot make the application's mix of
// hot and cold bytes, so it takes both images at the same point between the two it can make.
struct CacheBlend {
  Stats captured, variant;
  double a = 0;
  std::string why;
};
// `rule`: the other-work rule's state, taken (a = 0 warm, 1 cold) where the captured image
// times the same warm and cold (cache_indifferent): its application time says nothing then.
CacheBlend blend_cache(double in_app_ns, const Stats& captured_warm, const Stats& captured_cold,
                       const Stats& variant_warm, const Stats& variant_cold,
                       const std::optional<CacheChoice>& rule = std::nullopt);

}  // namespace kerncap::replay
