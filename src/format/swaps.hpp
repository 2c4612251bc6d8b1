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

// What `kerncap run --check CMD` hands CMD after each run (its environment): which arm
// ("base" or "swap"), the run's index (from 0), its folder, and the file holding what the
// application printed on stdout.
inline constexpr std::string_view kRunEnvArm = "KERNCAP_RUN_ARM";
inline constexpr std::string_view kRunEnvIndex = "KERNCAP_RUN_INDEX";
inline constexpr std::string_view kRunEnvDir = "KERNCAP_RUN_DIR";
inline constexpr std::string_view kRunEnvStdout = "KERNCAP_RUN_STDOUT";

struct SwapSpec {
  std::string kernel;  // the application's kernel, its whole mangled name
  std::string entry;   // the variant image's kernel that serves it (kernel, or its static counterpart)
  std::string image;   // absolute path of the variant image (cubin, fatbin or PTX)
  // false: the library resolves and counts the kernel's launches but leaves them alone (the
  // unmodified arm of `run --repeat`, which then pays the same callbacks as the swapped arm).
  bool apply = true;
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
