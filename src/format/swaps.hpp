#pragma once
// The swap contract (`kerncap run --swap`, docs/swap.md): which kernels the injected library
// serves from which variant image while the application runs, handed over in KERNCAP_SWAPS,
// and what each process reports back at exit (OUT/swap-<pid>.json). The launcher resolves
// everything it can before the application starts (the variant's entry for the kernel, the
// parameter layouts), so that the library only compares names and loads an image.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::format {

// The version of KERNCAP_SWAPS's value ({"version": N, "swaps": [...]}).
inline constexpr int kSwapsVersion = 1;
inline constexpr size_t kMaxSwaps = 16;
// The report a process writes at exit.
inline constexpr std::string_view kSwapReportFormat = "kerncap-swap-report";
inline constexpr int kSwapReportVersion = 1;

struct SwapSpec {
  std::string kernel;  // the application's kernel, its whole mangled name
  std::string entry;   // the variant image's kernel that serves it (kernel, or its static counterpart)
  std::string image;   // absolute path of the variant image (cubin, fatbin or PTX)
  // false: the library resolves and counts the kernel's launches but leaves them alone (the
  // unmodified arm of `run --repeat`, which then pays the same callbacks as the swapped arm).
  bool apply = true;
  // Shadow checking (`run --shadow`, with apply false): every shadow_every-th launch of the
  // kernel (0: none) also runs the variant on the side, on a copy of what it can reach, and
  // the two results are compared; the application keeps its own kernel's.
  uint64_t shadow_every = 0;
  uint64_t shadow_max_bytes = 0;  // a launch reaching more is skipped (0: no limit)
  // The element type each parameter points at (compare::to_string names, "" untyped), from
  // the kernel's C++ signature: a region is compared within its type's default tolerance.
  std::vector<std::string> param_dtypes;
  bool operator==(const SwapSpec&) const = default;
};

std::string swaps_to_text(const std::vector<SwapSpec>& swaps);
// Parses KERNCAP_SWAPS; returns the problem ("" when fine). Never throws.
std::string swaps_from_text(std::string_view text, std::vector<SwapSpec>* out);

// One kernel's launches in one process.
struct SwapCount {
  std::string kernel, entry;
  bool apply = true;
  uint64_t launches = 0;     // host launches of the kernel (cuLaunchKernel & co.)
  uint64_t swapped = 0;      // of them, served by the variant
  uint64_t graph_nodes = 0;  // kernel nodes of explicitly built graphs given the variant
  std::string refused;       // why the variant was not used ("" when it was, or never asked)
  // Shadow checking: launches compared, skipped (and the first reason), and the first that
  // differed: its index among the kernel's launches, its shape, and what differs.
  uint64_t shadow_checked = 0, shadow_skipped = 0, shadow_failed = 0;
  std::string shadow_skip_reason;
  double shadow_seconds = 0;  // host time spent checking (the overhead)
  nlohmann::json first_failure;  // null, or {"launch", "grid", "block", "shared", "param", "region", "summary"}
};

struct SwapReport {
  int64_t pid = 0;
  std::vector<SwapCount> kernels;
};

nlohmann::json swap_report_json(const SwapReport& r);
// Reads OUT/swap-<pid>.json strictly (Error(Input) naming the file when it is not one).
SwapReport read_swap_report(const std::filesystem::path& file);
// Every swap-*.json in `dir`, by pid.
std::vector<SwapReport> read_swap_reports(const std::filesystem::path& dir);
std::string swap_report_name(int64_t pid);  // "swap-<pid>.json"

}  // namespace kerncap::format
