#pragma once
// Whether `kerncap validate` may hand its evaluation to a running `kerncap serve`, and how.
// The server judges with the one judge (replay/judge.hpp) over a session it opened with its
// own options; every judging flag (spec, tolerances, invariants, determinism, fuzz, speed-up)
// travels as kc_evaluate's options and is resolved there over the same OUT/kerncap.toml, so
// the server answers every validation `validate` can run. What it cannot answer is a session
// opened otherwise: another directory, kerncap version or device, another launch geometry,
// relocation forbidden, the capture files checked as this process reads them, or another
// strength. The reason is said in one line. Pure: tested without a socket or a GPU.
#include <sys/types.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/strong.hpp"

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
  std::optional<int> device;    // --device
  FootprintUse footprint = FootprintUse::Auto;
  uint64_t fuzz = 0;            // --fuzz (needs the server's footprint)
  nlohmann::json options = nlohmann::json::object();  // kc_evaluate's options: the judge's flags
};

// The server's "server" object (ping and every answer): who it is and how its session was opened.
struct ServerInfo {
  pid_t pid = 0;
  std::string dir;                // canonical
  int device = 0;                 // the ordinal it replays on
  std::optional<int> device_option;  // its --device
  bool strong = false;            // its session poisons (it has the footprint)
  std::string footprint;          // its --footprint: auto, never, require
  std::string device_line;        // replay::device_line
  std::string compare_json;       // its OUT/compare.json as the comparison source names it
  nlohmann::json placement;       // PlacementStats
  std::string kerncap;            // version
  nlohmann::json to_json() const;
  static ServerInfo from_json(const nlohmann::json& j);  // throws serve::ProtocolError
};

// "" when the server's verdict for `v` is the one this process would reach; else why not,
// as a clause ("--grid/--block change the launch").
std::string why_not_served(const ValidateShape& v, const ServerInfo& s, const std::string& dir);

// The verdict's "spec" as this process names it: the server names its own compare.json (its
// canonical path); here it is `own_compare_json`.
std::string spec_source_here(const std::string& served, const ServerInfo& s, const std::string& own_compare_json);

}  // namespace kerncap::cli
