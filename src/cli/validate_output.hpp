#pragma once
// What `kerncap validate` prints, from the one judge's verdict document whichever process
// reached it: this one or a `kerncap serve`. One printer,
// so a served verdict reads exactly as one reached here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/capture_dir.hpp"
#include "replay/address_space.hpp"

namespace kerncap::cli {

struct ValidateOutput {
  nlohmann::json verdict;  // replay::Verdict::to_json()
  std::string kernel, image;
  std::string device_line;  // replay::device_line
  int device = 0;
  replay::PlacementStats placement;
  uint64_t rewritten_words = 0;
  nlohmann::json restore_work;  // {"seconds", "copied_bytes", "memset_bytes", "overlaid_bytes"}
  bool determinism_checked = false;
  std::optional<nlohmann::json> fuzz, speedup;  // their to_json()
  std::string fuzz_line, speedup_line;          // as printed (the speed-up's with its source)
  std::string invariants_from;                  // "[from ...]" of the invariants line
  std::string speedup_note;                     // why a min_speedup was not checked
  std::string line;                             // the final result line
  bool pass = false;
  int served_by = 0;  // the pid of the `kerncap serve` that evaluated it; 0: this process
};

// validate --json's document: the verdict document plus the printer's keys; `pruned`: the
// pruned note ("" when none), `toml`: the kerncap.toml path when one was read.
nlohmann::json validate_document(const ValidateOutput& o, const std::string& pruned,
                                 const std::optional<std::string>& toml);
// Every key validate --json can print (`kerncap env --json` lists them under the verdict
// document, so Python's ValidateResult is checked against this list).
std::vector<std::string> validate_document_keys();

// Prints `o` as validate does: JSON (with `toml`, the kerncap.toml path, when one was read)
// or text, with the pruned note of `dir`.
void print_validate(const ValidateOutput& o, const format::Capture& cap, bool json,
                    const std::optional<std::string>& toml);

// PlacementStats as the server's description carries them.
nlohmann::json placement_json(const replay::PlacementStats& p);

// The output from an evaluation's verdict document (Evaluation::to_json(), reached in this
// process or by a server) and the placement of the session that reached it.
ValidateOutput output_from_evaluation(const nlohmann::json& evaluation, const std::string& device_line,
                                      const nlohmann::json& placement);

}  // namespace kerncap::cli
