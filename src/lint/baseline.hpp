#pragma once
// Baselines of a reproducer (OUT/baselines/NAME.json, versioned) and the comparison of a
// new measurement with one. Pure data and arithmetic: the measuring (replay, timing,
// validation on the GPU) is the CLI's (src/cli/cmd_baseline.cpp).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::lint {

inline constexpr int kBaselineVersion = 1;

struct Baseline {
  std::string name;
  std::string created;       // UTC, ISO 8601
  std::string tool_version;
  std::string kernel;        // mangled
  std::string image;         // the code object measured (captured image or variant path)
  std::string image_xxh64;   // "0x..." of its bytes
  std::string gpu;           // the replay device's name
  int sm = 0;
  int driver_version = 0;
  // Replay time of one launch, CUDA events, ms.
  double median_ms = 0, min_ms = 0, max_ms = 0, stddev_ms = 0;
  int iterations = 0, warmup = 0;
  // Resources (from the cubin; spills from the SASS when a disassembler was found).
  int registers = -1;
  int local_bytes = -1;
  int shared_static_bytes = -1;
  std::optional<int64_t> spill_instructions;
  std::optional<double> occupancy;  // theoretical, of the captured launch
  // Numerical result against the application's AFTER.
  bool validation_pass = false;
  double max_abs_error = 0, max_rel_error = 0;
  uint64_t failing_regions = 0;
  // `--fuzz N` trials (absent when not asked for; older files have neither of these two).
  struct Fuzz {
    bool pass = true;
    uint64_t trials = 0, seed = 0, failed_trials = 0;
    std::string first_failure;  // the report's line when it failed
  };
  std::optional<Fuzz> fuzz;
  // The invariants of OUT/kerncap.toml checked in that validation (absent: none enabled).
  struct Invariants {
    bool pass = true;
    std::string checked;                  // "no_nan, must_write"
    std::vector<std::string> violations;  // one line each
  };
  std::optional<Invariants> invariants;
};

nlohmann::json to_json(const Baseline& b);
// Throws Error(Input) naming the file (`source`) on a wrong format, newer version or missing field.
Baseline baseline_from_json(const nlohmann::json& j, const std::string& source);

// OUT/baselines/NAME.json (OUT may be given as OUT/capture). NAME: letters, digits, '.', '-', '_'.
std::filesystem::path baseline_path(const std::filesystem::path& out_dir, const std::string& name);
void save_baseline(const std::filesystem::path& out_dir, const Baseline& b);
// Throws Error(Input) when absent ("no baseline NAME in OUT/baselines (have: a, b)").
Baseline load_baseline(const std::filesystem::path& out_dir, const std::string& name);

enum class Change { Same, Better, Worse, Info };
const char* to_string(Change c);  // "same" | "better" | "WORSE" | "info"

struct DiffRow {
  std::string metric;
  std::string baseline, current, delta;
  Change change = Change::Info;
};

struct DiffThresholds {
  double time_rel = 0.03;   // a time change below 3% of the baseline median is noise...
  double noise_sigmas = 3;  // ...and so is one below 3 x the combined standard deviation
};

struct DiffReport {
  std::vector<DiffRow> rows;
  double speedup = 0;  // baseline median / current median
  bool regression() const;
};

// Time: worse/better only beyond max(time_rel x median, noise_sigmas x sqrt(sb^2 + sc^2)), and
// only on the same GPU. Registers, spills, local memory: more is worse. Occupancy: lower is
// worse. Validation: a pass turning into a failure, or a failure with a larger error, is worse.
// Fuzz and invariants: a pass turning into a failure is worse (only shown when one side lacks them).
DiffReport diff(const Baseline& base, const Baseline& cur, const DiffThresholds& t = {});
std::string result_line(const DiffReport& d);  // "Result: REGRESSION" / "Result: NO REGRESSION"
std::string to_text(const DiffReport& d, const Baseline& base, const Baseline& cur);
nlohmann::json to_json(const DiffReport& d);

}  // namespace kerncap::lint
