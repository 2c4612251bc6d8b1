#pragma once
// Whether `kerncap validate` may hand its evaluation to a running `kerncap serve`, and how.
// The server runs the evaluation loop (replay/evaluate.hpp) over a session it opened with
// its own options; it is used only where its verdict is the one this process would reach:
// the same strength, device, comparison and checks. Anything else — another geometry,
// invariants, tolerance tables, a speed-up, test hooks — is validated here, and the reason
// is said in one line. Pure: tested without a socket or a GPU.
#include <sys/types.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/strong.hpp"
#include "replay/compare_spec.hpp"

namespace kerncap::cli {

enum class ServerUse { Auto, Off };
// --server auto|off, else KERNCAP_SERVE, else auto. Error(Usage) for another value (the
// variable's problem names the variable).
ServerUse server_use_from(const std::string& flag, const std::optional<std::string>& env);

// What a validation asks for, as far as the server's ability to answer it depends on it.
struct ValidateShape {
  bool geometry = false;        // --grid / --block
  bool no_relocate = false;     // --no-relocate
  bool collide = false;         // --collide (test hook)
  bool verify = false;          // --verify
  bool no_determinism = false;  // --no-determinism-check
  bool invariants = false;      // any invariant (flags or kerncap.toml)
  bool tolerance_table = false;  // kerncap.toml [tolerances]
  bool region_tolerances = false;  // --tolerance
  double min_speedup = 0;       // > 0: a speed-up to time
  std::optional<int> device;    // --device
  FootprintUse footprint = FootprintUse::Auto;
  std::optional<replay::CompareSpec> spec;  // forced by --dtype/--atol/--rtol
  uint64_t fuzz = 0, seed = 1;
};

// The server's "server" object (ping and every answer): who it is and how its session was opened.
struct ServerInfo {
  pid_t pid = 0;
  std::string dir;                // canonical
  int device = 0;                 // the ordinal it replays on
  std::optional<int> device_option;  // its --device
  bool strong = false;            // its session poisons (it has the footprint)
  std::string footprint;          // its --footprint: auto, never, require
  std::string device_line;        // ValidateReport::device
  std::string compare_json;       // its OUT/compare.json as the comparison source names it
  nlohmann::json placement;       // PlacementStats
  std::string kerncap;            // version
  nlohmann::json to_json() const;
  static ServerInfo from_json(const nlohmann::json& j);  // throws serve::ProtocolError
};

// "" when the server's verdict for `v` is the one this process would reach; else why not,
// as a clause ("--grid/--block change the launch").
std::string why_not_served(const ValidateShape& v, const ServerInfo& s, const std::string& dir);

// The evaluate options (kc_evaluate's keys) for `v`: untimed, fuzz and seed, the forced spec.
nlohmann::json evaluate_options(const ValidateShape& v);

// The verdict's "spec" as this process names it: the server names its own compare.json and
// the forced spec "the evaluate option ..."; here they are `own_compare_json` and "command line".
std::string spec_source_here(const std::string& served, const ServerInfo& s, const std::string& own_compare_json,
                             bool forced);

}  // namespace kerncap::cli
