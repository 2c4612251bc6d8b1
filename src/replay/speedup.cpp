#include "replay/speedup.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::replay {

SpeedupCheck judge_speedup(const Stats& captured, const Stats& variant, double min_speedup) {
  // 0: measured without a threshold (it passes); else the threshold.
  if (!(min_speedup >= 0) || !std::isfinite(min_speedup))
    usage_error(fmt::format("the minimum speed-up must be a number >= 0 (got {})", min_speedup));
  SpeedupCheck c;
  c.min_speedup = min_speedup;
  c.captured = captured;
  c.variant = variant;
  c.speedup = variant.median > 0 ? captured.median / variant.median : 0;
  return c;
}

std::string SpeedupCheck::line(int iterations) const {
  if (min_speedup == 0)
    return fmt::format("Speed-up: x{:.3f} (no threshold asked for: captured image {:.4f} ms, variant {:.4f} ms, "
                       "medians of {})",
                       speedup, captured.median, variant.median, iterations);
  return fmt::format("Speed-up: {} (x{:.3f} {} x{:.3f} required: captured image {:.4f} ms, variant {:.4f} ms, "
                     "medians of {})",
                     pass() ? "PASS" : "FAIL", speedup, pass() ? ">=" : "<", min_speedup, captured.median,
                     variant.median, iterations);
}

nlohmann::json SpeedupCheck::to_json() const {
  return {{"pass", pass()},
          {"speedup", speedup},
          {"min_speedup", min_speedup},
          {"captured_median_ms", captured.median},
          {"captured_stddev_ms", captured.stddev},
          {"variant_median_ms", variant.median},
          {"variant_stddev_ms", variant.stddev},
          {"cache", cache}};
}

}  // namespace kerncap::replay
