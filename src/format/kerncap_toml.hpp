#pragma once
// OUT/kerncap.toml: the per-reproducer rules a kernel author keeps beside the capture.
// The file is untrusted input: every key is checked for its name and type, and an error
// names the key and its line.
//
//   [tolerances]          per dtype, e.g.  fp32 = { atol = 1e-6, rtol = 1e-5 }
//   [invariants]          no_nan, no_inf, non_negative, must_write   (booleans)
//   [artifact_checks]     max_registers, max_spills, max_local_memory (integers >= 0),
//                         required_patterns, forbidden_patterns       (arrays of regexes)
//   [timing]              min_speedup (number > 0)
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/compare.hpp"

namespace kerncap::format {

inline constexpr const char* kKerncapTomlName = "kerncap.toml";
// The most bytes a kerncap.toml may have (the default file is about 2 KiB).
inline constexpr uint64_t kMaxKerncapTomlBytes = 1 << 20;

struct Invariants {
  bool no_nan = false;
  bool no_inf = false;
  bool non_negative = false;
  bool must_write = false;
};

struct ArtifactChecks {
  std::optional<int64_t> max_registers;
  std::optional<int64_t> max_spills;        // STL + LDL instructions in the SASS
  std::optional<int64_t> max_local_memory;  // bytes per thread
  std::vector<std::string> required_patterns;   // ECMAScript regexes, checked when read
  std::vector<std::string> forbidden_patterns;
};

struct Timing {
  std::optional<double> min_speedup;  // replay time of the captured image / the variant's
};

struct KerncapConfig {
  std::map<compare::DType, compare::Tolerance> tolerances;
  Invariants invariants;
  ArtifactChecks artifact_checks;
  Timing timing;
};

// Parses TOML text; `source` names it in messages ("OUT/kerncap.toml"). Throws
// Error(Input) "OUT/kerncap.toml:12: [artifact_checks] max_registers: expected an integer".
KerncapConfig parse_kerncap_toml(std::string_view text, const std::string& source);
// OUT/kerncap.toml (OUT may be given as OUT/capture); nullopt when the file is absent.
// Error(Input) for anything but a regular file of at most kMaxKerncapTomlBytes in OUT (a
// symbolic link, a FIFO, a device, a directory).
std::optional<KerncapConfig> load_kerncap_toml(const std::filesystem::path& out_dir);
// The file extract writes: every key, commented, with kerncap's defaults.
std::string default_kerncap_toml();
// Writes the default file into OUT unless one exists; true when it wrote it.
bool write_default_kerncap_toml(const std::filesystem::path& out_dir);

}  // namespace kerncap::format
