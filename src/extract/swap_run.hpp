#pragma once
// `kerncap run` without the printing (docs/swap.md): the application run in pairs, once as
// it is and once with the swaps applied, each with profile mode's kernel records (so both
// arms pay the same for them) and the swap callbacks (the unmodified arm's swaps have
// apply=false: resolved and counted, never applied); its output kept per run; the user's
// --check run after each; medians with 95 % intervals and the paired ratios.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "extract/launcher.hpp"
#include "extract/profile_run.hpp"
#include "format/swaps.hpp"
#include "common/statistics.hpp"

namespace kerncap::extract {

// One --swap resolved (cli/swap_plan.hpp resolves them before anything runs).
struct SwapPlan {
  format::SwapSpec spec;
  std::string target;           // as given
  std::string capture;          // the capture it came from ("" for a name)
  std::string demangled;        // for messages
  bool layout_checked = false;  // against the capture's layout (else the library checks at the first launch)
  std::string compiled_from;    // a Triton kernel_variant.py the image was compiled from ("" otherwise)
  std::string compile_verdict;  // its reproducer's verdict line on the captured launch
};

inline constexpr std::string_view kRunReportFormat = "kerncap-run-report";
inline constexpr int kRunReportVersion = 1;

struct SwapRunOptions {
  AppCommand app;
  std::vector<SwapPlan> plans;
  size_t pairs = 1;         // --repeat
  size_t warmup_pairs = 0;  // --warmup: pairs run first and left out of the times (caches, JIT, clocks)
  std::string check;        // --check: a shell command run after each run ("" none)
  std::filesystem::path dir;  // where each run's records and output go (created)
  // --shadow: the second arm runs the original kernel and checks every shadow_every-th
  // launch against the variant (capture/shadow.hpp) instead of swapping (0: swap).
  uint64_t shadow_every = 0;
  uint64_t shadow_max_bytes = 0;
  int64_t rank = -1;  // --rank: only that process of a multi-process job is swapped (-1: all)
  int verbose = 0;
};

struct RunArm {
  size_t index = 0;   // from 0, in the order run
  bool swapped = false;
  bool warmup = false;  // a warm-up run: judged like the others, left out of the times
  double wall_s = 0;
  AppExit exit;
  uint64_t gpu_ns = 0, kernel_ns = 0;  // CUPTI: all kernels; the swapped kernels (either name)
  uint64_t launches = 0, swapped_launches = 0, graph_nodes = 0;
  std::vector<std::string> refused;    // the library's reasons, per kernel that was left alone
  uint64_t shadow_checked = 0, shadow_skipped = 0, shadow_failed = 0;
  std::string shadow_skip_reason;
  double shadow_seconds = 0;
  nlohmann::json first_failure;        // the first launch the variant got wrong (null: none)
  std::string records_problem;         // why the records cannot be read ("" when they can)
  std::filesystem::path stdout_file;
  std::optional<int> check_status;     // the --check command's exit status
  std::string check_output;            // its last lines
};

struct SwapRunResult {
  std::vector<RunArm> runs;
  MedianCI wall[2], gpu[2], kernel[2];  // [0] unmodified, [1] swapped
  MedianCI wall_ratio, gpu_ratio, kernel_ratio;  // unmodified / swapped, per pair
  bool base_outputs_agree = true;     // the unmodified runs printed the same
  bool outputs_identical = true;      // every swapped run printed what the first unmodified run did
  std::string first_difference;       // "run 3, line 12: '...' (unmodified: '...')"
  size_t checks_failed = 0, checks_run = 0;
  double shadow_overhead_s = 0;       // per checked launch: host time the checks took
  // ok | refused | not_swapped | app_failed | output_differs | check_failed | shadow_failed | not_checked
  std::string verdict;
  std::string why;                    // one sentence for the verdict
};

using RunProgress = std::function<void(const RunArm&, size_t total)>;
SwapRunResult run_swapped(const SwapRunOptions& o, const RunProgress& progress = {});

// The verdict document ("kerncap-run-report" 1) and the text the CLI prints.
nlohmann::json run_report_json(const SwapRunOptions& o, const SwapRunResult& r);
std::string run_report_text(const SwapRunOptions& o, const SwapRunResult& r);

// The first line where two outputs differ, "" when they are the same. Pure (unit tested).
std::string first_line_difference(const std::string& a, const std::string& b);
// Fills the summary fields of `r` from its runs (medians, ratios, outputs, verdict).
void summarise(SwapRunResult& r, const std::vector<std::string>& outputs, bool has_check, bool shadow = false);

}  // namespace kerncap::extract
