#pragma once
// OUT/regimes.json: what `kerncap extract KERNEL --regimes` took — one capture per launch
// shape of one kernel, each with the launches it stands for and its share of the kernel's
// GPU time in the run that found them — read by `kerncap validate OUT` (and Python) to judge a
// candidate over the whole workload. A cross-process contract: versioned, and read as
// untrusted input (captures are shared): strict types and ranges, each regime's directory one
// plain name inside OUT.
//
// {"format": "kerncap-regimes", "version": 1,
//  "kernel": {"mangled": "...", "demangled": "..."}, "application": "...", "pid": N,
//  "launches": N, "time_ns": N, "app_time_ns": N, "uncounted": N,
//  "dropped": {"regimes": N, "launches": N, "time_ns": N},
//  "regimes": [{"dir": "00-name", "grid": [x, y, z], "block": [x, y, z], "cluster": [x, y, z],
//               "dynamic_shared": N, "launches": N, "time_ns": N, "share": 0.73,
//               "dispatch": N, "captured": true, "why": "..."}]}
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::format {

inline constexpr std::string_view kRegimesFormat = "kerncap-regimes";
inline constexpr int kRegimesVersion = 1;
inline constexpr size_t kMaxRegimes = 64;  // = the most targets one run takes

struct RegimeEntry {
  std::string dir;  // one name inside OUT
  std::array<int32_t, 3> grid{}, block{};
  std::array<uint32_t, 3> cluster{};
  int32_t dynamic_shared = 0;
  uint64_t launches = 0, time_ns = 0, dispatch = 0;
  double share = 0;  // of the kernel's GPU time, 0..1
  bool captured = false;
  std::string why;  // not captured: why
  bool operator==(const RegimeEntry&) const = default;
};

struct RegimesIndex {
  std::string mangled, demangled, application;
  int64_t pid = 0;
  uint64_t launches = 0, time_ns = 0, app_time_ns = 0, uncounted = 0;
  uint64_t dropped_regimes = 0, dropped_launches = 0, dropped_ns = 0;
  std::vector<RegimeEntry> regimes;
  bool operator==(const RegimesIndex&) const = default;
  // The captured regimes' share of the kernel's GPU time.
  double coverage() const;
};

nlohmann::json to_json(const RegimesIndex& r);
// Error(Input) naming the field for anything but exactly a version-1 index.
RegimesIndex regimes_from_json(std::string_view text, const std::string& file_name);
// OUT/regimes.json, when OUT holds one (a regular file, not a link, bounded).
bool has_regimes(const std::filesystem::path& out);
RegimesIndex read_regimes(const std::filesystem::path& out);
void write_regimes(const std::filesystem::path& out, const RegimesIndex& r);

}  // namespace kerncap::format
