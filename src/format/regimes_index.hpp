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
//               "dispatch": N, "captured": true, "why": "...",
//               "params": [{"slot": N, "offset": N, "size": N, "value": N, "varies": true}]}]}
//
// "params" (optional; absent in indexes of kerncaps before it, and for a regime whose launches
// had no parameter signature): the scalar words (format/profile_records.hpp's ScalarWord) that
// key the regime with its shape, in buffer order; "varies": the word does not hold one value
// over all the kernel's regimes (what tells this regime apart: "param 2 = 4096").
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

// One scalar parameter word of a regime (the "params" list).
struct RegimeParam {
  uint32_t slot = 0, offset = 0, size = 0;  // parameter ordinal, byte offset in it, bytes (1..8)
  uint64_t value = 0;
  bool varies = false;  // differs between the kernel's regimes
  bool operator==(const RegimeParam&) const = default;
};
inline constexpr size_t kMaxRegimeParams = 64;  // = kMaxScalarWords

// "param 2 = 4096" (parameter ordinals from 0; "param 5+8": byte 8 of parameter 5). Types are
// unknown: integers in decimal (negative ones signed), other bits in hex.
std::string param_word_text(const RegimeParam& p);
// The words that vary, joined by ", " ("" when none).
std::string varying_params_text(const std::vector<RegimeParam>& params);

struct RegimeEntry {
  std::string dir;  // one name inside OUT
  std::array<int32_t, 3> grid{}, block{};
  std::array<uint32_t, 3> cluster{};
  int32_t dynamic_shared = 0;
  uint64_t launches = 0, time_ns = 0, dispatch = 0;
  double share = 0;  // of the kernel's GPU time, 0..1
  bool captured = false;
  std::string why;  // not captured: why
  std::vector<RegimeParam> params;  // its scalar words (empty: none recorded)
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

class JsonField;
// A directory an index names (a regime's, a kernel set's): one plain name inside OUT (letters,
// digits, '.', '-', '_'; not starting with '.'), never a path or a dot-name, so that a crafted
// index cannot point validate outside OUT. Error(Input) naming the field otherwise.
std::string index_dir_name(const JsonField& f);
// OUT/<dir> for such a name, when it is a directory of OUT itself: Error(Input) when it is a
// symbolic link (a set copied or crafted with a link would have validate read, and judge, a
// capture elsewhere: issue 38's OUT/capture through a link) or not a directory. `what` says
// what the index lists there ("regime", "kernel set"), for the message.
std::filesystem::path index_subdir(const std::filesystem::path& out, const std::string& dir, const std::string& what);

nlohmann::json to_json(const RegimesIndex& r);
// Error(Input) naming the field for anything but exactly a version-1 index.
RegimesIndex regimes_from_json(std::string_view text, const std::string& file_name);
// OUT/regimes.json, when OUT holds one (a regular file, not a link, bounded).
bool has_regimes(const std::filesystem::path& out);
RegimesIndex read_regimes(const std::filesystem::path& out);
void write_regimes(const std::filesystem::path& out, const RegimesIndex& r);

}  // namespace kerncap::format
