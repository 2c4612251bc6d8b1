#pragma once
// Options shared by `replay` and `validate`.
#include <array>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "replay/session.hpp"

namespace kerncap::cli {

struct ReplayCommon {
  std::string dir;
  std::string cubin;
  bool no_relocate = false;
  bool verify = false;
  int collide = -1;
  bool json = false;
  bool quiet = false;
  bool baseline = false;  // the captured image even when the reproducer has a fresh variant
  std::string grid, block;  // "X[,Y[,Z]]": launch geometry instead of the captured one
  int device = -1;          // --device: the CUDA device to replay on (-1: chosen, device_choice.hpp)
  replay::Options options() const;
};

void add_replay_common(CLI::App* cmd, const std::shared_ptr<ReplayCommon>& c);
// --store DIR: the shared chunk store of a capture extracted with --store (every command
// that reads BEFORE memory takes it; KERNCAP_STORE is the default).
void add_store_option(CLI::App* cmd);
// "pruned: ..." when the capture in `dir` was pruned (kerncap prune), else "".
std::string pruned_note(const std::string& dir);
std::string pruned_note(const format::Capture& cap);
// "X[,Y[,Z]]" → {X, Y, Z} (missing dimensions are 1). `what` names the flag in errors; the
// limits are the CUDA launch limits (x < 2^31, y and z <= 65535; a block of at most 1024 threads).
std::array<uint32_t, 3> parse_dims(const std::string& text, const char* what);
// Without --cubin/--baseline: the reproducer's variant (optimized.cubin, or a Triton
// candidate.cubin) when it is newer than its sources; says so on stderr ("validating the
// variant OUT/optimized.cubin ..."). `verb`: "validating" or "replaying".
ReplayCommon with_fresh_variant(const ReplayCommon& c, const char* verb);
// "placement: 3 blocks at their addresses, 0 relocated; 12 pointer words rewritten"
std::string placement_line(const replay::PlacementStats& st, uint64_t rewritten);

}  // namespace kerncap::cli
