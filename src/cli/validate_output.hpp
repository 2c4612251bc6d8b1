#pragma once
// What `kerncap validate` prints, from one description of a result whichever process reached
// it: this one (replay::validate) or a `kerncap serve` (its evaluation's JSON). One printer,
// so a served verdict reads exactly as one reached here.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "replay/address_space.hpp"

namespace kerncap::cli {

struct ValidateOutput {
  nlohmann::json verdict;  // replay::Verdict::to_json()
  std::string kernel, image;
  std::string device_line;  // ValidateReport::device
  int device = 0;
  replay::PlacementStats placement;
  uint64_t rewritten_words = 0;
  nlohmann::json restore_work;  // {"seconds", "copied_bytes", "memset_bytes", "overlaid_bytes"}
  bool determinism_checked = false;
  std::optional<nlohmann::json> fuzz, speedup;  // their to_json()
  std::string fuzz_line, speedup_line;          // as printed (the speed-up's with its source)
  std::string invariants_from;                  // "[from ...]" of the invariants line
  std::string line;                             // the final result line
  bool pass = false;
  int served_by = 0;  // the pid of the `kerncap serve` that evaluated it; 0: this process
};

// Prints `o` as validate does: JSON (with `toml`, the kerncap.toml path, when one was read)
// or text, with the pruned note of `dir`.
void print_validate(const ValidateOutput& o, const std::string& dir, bool json, const std::optional<std::string>& toml);

// The output from a served evaluation (Evaluation::to_json()) and the server's placement.
ValidateOutput output_from_evaluation(const nlohmann::json& evaluation, const std::string& device_line,
                                      const nlohmann::json& placement);

}  // namespace kerncap::cli
