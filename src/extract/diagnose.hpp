#pragma once
// Why `kerncap extract` has no capture, and whether the library it injected speaks this
// build's protocol, told from the library's events (format/events.hpp) and from how the
// application ended. Pure functions: unit-tested by feeding event lines.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "extract/launcher.hpp"
#include "format/events.hpp"

namespace kerncap::extract {

struct Target {
  std::string kernel;  // the pattern as the user gave it
  uint64_t dispatch = 0;
  int64_t rank = -1;  // --rank (-1: not given)
  int device = -1;    // --device (-1: not given)
};

// The message for a run that left no capture, as precisely as the events allow: the
// library never started, failed inside the application, saw no kernel, saw no match
// (with the closest names), saw too few matches for the dispatch, or reached the target
// but the application ended first; with --rank, no process had that rank (naming the ranks
// seen). Notes skipped graph-capture launches, graph launches and launches on other devices.
std::string diagnose(const Target& t, const format::events::Log& log, const AppExit& app);

// nullopt when every process's library speaks this build's protocol (or none started);
// else "libkerncap.so at PATH speaks protocol N, this kerncap speaks M; ..." naming what
// to do.
std::optional<std::string> protocol_mismatch(const format::events::Log& log, const std::filesystem::path& library);

// Throws Error(Input) with protocol_mismatch's message.
void check_protocol(const format::events::Log& log, const std::filesystem::path& library);

}  // namespace kerncap::extract
