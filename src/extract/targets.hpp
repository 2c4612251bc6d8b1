#pragma once
// Several targets in one run (`extract --kernel A --kernel B`, `--top N --from`): what each
// target is, the name of its capture directory, and the index file listing them.
//
// Layout: with one target, OUT is that target's reproducer directory exactly as always
// (format/out_layout.hpp). With several, OUT is their parent:
//
//   OUT/targets.json       the index: each target's pattern, match, dispatch, directory,
//                          whether it was captured and, if not, why (kTargetsIndexFormat)
//   OUT/NN-<name>/         one reproducer directory per target (NN: its place in the list,
//                          from 00; <name>: its --kernel pattern, or the demangled name of a
//                          --from kernel, filesystem-safe)
//   OUT/.kerncap/          the library's events for the whole run (each line names its target)
//   OUT/triton/            what the Triton shim recorded (copied into each Triton target's dir)
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/protocol.hpp"

namespace kerncap::extract {

namespace fs = std::filesystem;

inline constexpr std::string_view kTargetsIndexFormat = "kerncap-targets";
inline constexpr int kTargetsIndexVersion = 1;

struct TargetRequest {
  std::string kernel;  // the pattern
  format::MatchKind match = format::MatchKind::Substring;
  uint64_t dispatch = 0;
  std::string label;  // what the directory is named after (the demangled name, or the pattern)
  // Set by extract --regimes over several kernels: "KK-<kernel>/NN-<regime>" under OUT (two
  // plain names); empty: target_dir_name.
  std::string dir;
};

// `--kernel` values: PATTERN, or PATTERN@N for its Nth matching launch (N digits only;
// a pattern that itself ends in @digits is written PATTERN@digits@0). Throws Error(Usage)
// for an empty pattern or a dispatch count that does not fit.
TargetRequest parse_kernel_arg(const std::string& arg, uint64_t default_dispatch, bool regex);

// A filesystem-safe name for a target: letters, digits, '.', '-' and '_' of the label's
// kernel name (the demangled name without return type, parameters or template arguments
// when it has them), at most 40 characters, never empty, never starting with '.'.
std::string safe_name(std::string_view label);
// "NN-<safe name>": unique by its index.
std::string target_dir_name(size_t index, const TargetRequest& t);

// Throws Error(Usage) when two targets are the same pattern, match and dispatch, or when
// there are more than format::kMaxTargets.
void check_targets(const std::vector<TargetRequest>& targets);

// What became of one target, for the index file and the summary.
struct TargetOutcome {
  TargetRequest request;
  std::string dir;       // relative to OUT
  bool captured = false;
  std::string kernel;    // the captured kernel (demangled)
  uint64_t launch_index = 0;
  std::string why;       // not captured: the diagnosis
};

nlohmann::json targets_index(const std::vector<TargetOutcome>& outcomes, const std::string& application);

}  // namespace kerncap::extract
