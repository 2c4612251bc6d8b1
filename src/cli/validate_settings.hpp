#pragma once
// What `kerncap validate` checks, from OUT/kerncap.toml and the command line: flags override
// the file. [tolerances] replace the default table per dtype, [invariants] turn the checks
// on (--invariant LIST replaces them, --no-invariants turns them off), [timing] min_speedup
// asks a variant to be that much faster (--min-speedup replaces it). Pure: testable without a GPU.
#include <optional>
#include <string>
#include <vector>

#include "compare/invariants.hpp"
#include "lint/kerncap_toml.hpp"
#include "replay/compare_spec.hpp"

namespace kerncap::cli {

struct ValidateFlags {
  std::optional<std::string> invariants;  // --invariant no_nan,must_write
  bool no_invariants = false;             // --no-invariants
  std::vector<std::string> tolerances;    // --tolerance REGION:atol=..,rtol=..[,dtype=..] (repeatable)
  std::optional<double> min_speedup;      // --min-speedup X
};

struct ValidateSettings {
  compare::Invariants invariants;
  std::string invariants_from;  // "OUT/kerncap.toml", "--invariant", "--no-invariants" or ""
  replay::ToleranceTable tolerances;
  std::vector<replay::RegionTolerance> region_tolerances;
  std::optional<double> min_speedup;
  std::string min_speedup_from;  // "OUT/kerncap.toml" or "--min-speedup"
};

// `config` is the parsed OUT/kerncap.toml (none when absent) and `source` its path.
// Throws Error(Usage) for contradicting or malformed flags.
ValidateSettings resolve_validate_settings(const ValidateFlags& flags, const std::optional<lint::KerncapConfig>& config,
                                           const std::string& source);

compare::Invariants to_invariants(const lint::Invariants& inv);

}  // namespace kerncap::cli
