#include "cli/validate_settings.hpp"

#include <cmath>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::cli {

compare::Invariants to_invariants(const lint::Invariants& inv) {
  return {.no_nan = inv.no_nan, .no_inf = inv.no_inf, .non_negative = inv.non_negative, .must_write = inv.must_write};
}

ValidateSettings resolve_validate_settings(const ValidateFlags& flags, const std::optional<lint::KerncapConfig>& config,
                                           const std::string& source) {
  ValidateSettings s;
  if (flags.invariants && flags.no_invariants) usage_error("--invariant and --no-invariants contradict each other");
  if (config) {
    s.tolerances = config->tolerances;
    s.invariants = to_invariants(config->invariants);
    if (s.invariants.any()) s.invariants_from = source;
    if (config->timing.min_speedup) {
      s.min_speedup = config->timing.min_speedup;
      s.min_speedup_from = source;
    }
  }
  if (flags.invariants) {
    s.invariants = compare::parse_invariant_list(*flags.invariants);
    s.invariants_from = "--invariant";
  }
  if (flags.no_invariants) {
    s.invariants = {};
    s.invariants_from = "--no-invariants";
  }
  for (const std::string& t : flags.tolerances) s.region_tolerances.push_back(replay::parse_region_tolerance(t));
  if (flags.min_speedup) {
    if (!(*flags.min_speedup > 0) || !std::isfinite(*flags.min_speedup))
      usage_error(fmt::format("--min-speedup {}: expected a number > 0 (1.1 = at least 10% faster)", *flags.min_speedup));
    s.min_speedup = flags.min_speedup;
    s.min_speedup_from = "--min-speedup";
  }
  return s;
}

}  // namespace kerncap::cli
