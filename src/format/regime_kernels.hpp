#pragma once
// OUT/regime-kernels.json: what `kerncap extract --regimes --kernel A --kernel B` (or
// `--regimes --top N`) took in one run of the application — the regimes of several kernels,
// each kernel's set in its own directory OUT/KK-<name>/ laid out exactly as a one-kernel
// regime set (its regimes.json, format/regimes_index.hpp, and one capture per regime), so
// that `kerncap validate OUT/KK-<name> --cubin V` judges a variant of that kernel as before.
// `kerncap validate OUT` judges the captured image of every kernel. A cross-process
// contract: versioned and read as untrusted input (each kernel's directory one plain name).
//
// {"format": "kerncap-regime-kernels", "version": 1, "application": "...",
//  "kernels": [{"dir": "00-rms_norm", "mangled": "...", "demangled": "...", "pid": N,
//               "launches": N, "time_ns": N, "app_time_ns": N, "regimes": N, "captured": N}]}
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::format {

inline constexpr std::string_view kRegimeKernelsFormat = "kerncap-regime-kernels";
inline constexpr int kRegimeKernelsVersion = 1;
inline constexpr size_t kMaxRegimeKernels = 64;  // one run takes at most 64 targets, one per regime

struct RegimeKernel {
  std::string dir;  // one name inside OUT: the kernel's regime set
  std::string mangled, demangled;
  int64_t pid = 0;                  // the process whose launches made its regimes
  uint64_t launches = 0, time_ns = 0, app_time_ns = 0;
  uint64_t regimes = 0, captured = 0;  // regimes listed in its set, and of those captured
  bool operator==(const RegimeKernel&) const = default;
};

struct RegimeKernels {
  std::string application;
  std::vector<RegimeKernel> kernels;  // by GPU time, largest first
  bool operator==(const RegimeKernels&) const = default;
};

nlohmann::json to_json(const RegimeKernels& r);
// Error(Input) naming the field for anything but exactly a version-1 index.
RegimeKernels regime_kernels_from_json(std::string_view text, const std::string& file_name);
// OUT/regime-kernels.json, when OUT holds one (whatever its type: the reader refuses links).
bool has_regime_kernels(const std::filesystem::path& out);
RegimeKernels read_regime_kernels(const std::filesystem::path& out);
void write_regime_kernels(const std::filesystem::path& out, const RegimeKernels& r);

}  // namespace kerncap::format
