#include "replay/speedup.hpp"

#include <algorithm>
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
  c.speedup = c.measured() ? captured.median / variant.median : 0;
  return c;
}

std::string SpeedupCheck::line(int iterations) const {
  if (!measured())
    return fmt::format("Speed-up: FAIL (not measured: captured image {:.4f} ms, variant {:.4f} ms, medians of {})",
                       captured.median, variant.median, iterations);
  if (min_speedup == 0)
    return fmt::format("Speed-up: x{:.3f} (no threshold asked for: captured image {:.4f} ms, variant {:.4f} ms, "
                       "medians of {})",
                       speedup, captured.median, variant.median, iterations);
  return fmt::format("Speed-up: {} (x{:.3f} {} x{:.3f} required: captured image {:.4f} ms, variant {:.4f} ms, "
                     "medians of {})",
                     pass() ? "PASS" : "FAIL", speedup, pass() ? ">=" : "<", min_speedup, captured.median,
                     variant.median, iterations);
}

CacheBlend blend_cache(double in_app_ns, const Stats& captured_warm, const Stats& captured_cold,
                       const Stats& variant_warm, const Stats& variant_cold, const std::optional<CacheChoice>& rule) {
  CacheBlend b;
  const double in_app_ms = in_app_ns / 1e6;
  const double span = captured_cold.median - captured_warm.median;
  b.a = span > 0 ? std::clamp((in_app_ms - captured_warm.median) / span, 0.0, 1.0) : 0.0;
  const bool indifferent = rule && cache_indifferent(captured_warm, captured_cold);
  if (indifferent) b.a = rule->mode == CacheMode::Cold ? 1.0 : 0.0;
  auto at = [&](const Stats& warm, const Stats& cold) {
    Stats s = b.a < 0.5 ? warm : cold;
    s.median = warm.median + b.a * (cold.median - warm.median);
    s.stddev = std::max(warm.stddev, cold.stddev);
    return s;
  };
  b.captured = at(captured_warm, captured_cold);
  b.variant = at(variant_warm, variant_cold);
  if (indifferent)
    b.why = fmt::format("blend {:.2f}: the captured image times the same warm ({:.2f} µs) and cold ({:.2f} µs), so the "
                        "application's {:.2f} µs cannot place it; the other-work rule's state taken ({}); the variant "
                        "there (warm {:.2f} µs, cold {:.2f} µs)",
                        b.a, captured_warm.median * 1e3, captured_cold.median * 1e3, in_app_ns / 1e3, rule->why,
                        variant_warm.median * 1e3, variant_cold.median * 1e3);
  else
    b.why = fmt::format("blend {:.2f}: the application's {:.2f} µs of the captured image lies {:.0f}% of the way from "
                        "its warm {:.2f} µs to its cold {:.2f} µs replay; the variant taken at the same point (warm "
                        "{:.2f} µs, cold {:.2f} µs)",
                        b.a, in_app_ns / 1e3, 100 * b.a, captured_warm.median * 1e3, captured_cold.median * 1e3,
                        variant_warm.median * 1e3, variant_cold.median * 1e3);
  return b;
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
