#pragma once
// The live events file: how the injected library reports to the launcher while the
// application runs. OUT/.kerncap/events-<pid>.jsonl (out_layout.hpp), one JSON object per
// line, appended with O_APPEND so a crash loses at most the line being written. Every line
// has "event" (its kind) and "pid". The kinds, in the order they can appear:
//
//   start         always first: mode ("capture" | "profile"), tool (kerncap version),
//                 protocol (kProtocolVersion; the launcher refuses another one); with
//                 `extract --rank`: rank (the process's, absent when unknown), rank_source
//                 (the launcher variable, or "cuInit order"), selected (false: another
//                 rank's process, which then runs untouched and writes nothing more)
//   seen          a kernel name launched for the first time in this process: mangled,
//                 demangled, matches (whether the pattern matches it)
//   ignored       first launch of a name inside an autotuner benchmark (not counted):
//                 mangled, why
//   skipped       a matching launch not counted: on a stream capturing a CUDA graph (it
//                 counts when the graph runs), inside a graph launched into a capturing
//                 stream, or only in graphs never launched (at exit): mangled, why,
//                 reason (capturing_stream | nested_graph | unlaunched_graph)
//   graph_launch  the application launched a CUDA graph kerncap did not see instantiated
//                 (its kernels are not counted); once
//   unlaunched    at exit, while a target still waits: a matching kernel in a code image the
//                 application loaded that the host never launched (launched from the device,
//                 or not reached): mangled, demangled; at most kMaxUnlaunched lines
//   match         a matching launch was counted: index (from 0), mangled; written up to
//                 the target dispatch
//   error         the capture (or CUPTI start-up) failed: what
//   captured      the capture directory was published: dir, continue
//   stopping      the library ends the application now that the capture is complete
//
// Several targets in one run (Config::targets): a line about one target carries "target"
// (its index: match, error, captured); seen and skipped lines carry "targets" (the indices
// whose pattern matches the name). Lines without them concern every target. With one
// target neither field is written.
//
// Writers build lines with the functions below; readers fold a file into an EventLog.
// Unknown kinds and fields are ignored by readers (additions need no protocol bump;
// changed meanings do).
#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kerncap::format::events {

enum class Kind { Start, Seen, Ignored, Skipped, GraphLaunch, Match, Error, Captured, Stopping, Unlaunched };
inline constexpr Kind kAllKinds[] = {Kind::Start, Kind::Seen,  Kind::Ignored,  Kind::Skipped,  Kind::GraphLaunch,
                                     Kind::Match, Kind::Error, Kind::Captured, Kind::Stopping, Kind::Unlaunched};
inline constexpr size_t kMaxUnlaunched = 16;
std::string_view name(Kind k);
std::optional<Kind> kind_from_name(std::string_view s);

// Line builders ("pid" is added by the writer).
nlohmann::json start(std::string_view mode);  // carries this build's tool and protocol versions
// Adds the rank fields to a start line (`extract --rank`); rank < 0: unknown.
void add_rank(nlohmann::json& start_line, int64_t rank, std::string_view source, bool selected);
nlohmann::json seen(const std::string& mangled, const std::string& demangled, bool matches);
nlohmann::json ignored(const std::string& mangled, std::string_view why);
// Why a matching launch was not counted.
enum class SkipReason { CapturingStream, NestedGraph, UnlaunchedGraph };
std::string_view name(SkipReason r);
nlohmann::json skipped(const std::string& mangled, SkipReason reason);
// The targets a seen or skipped line concerns (several targets only).
void add_targets(nlohmann::json& line, const std::vector<int>& targets);
// The target a match, error or captured line concerns (several targets only).
void add_target(nlohmann::json& line, int target);
nlohmann::json graph_launch();
nlohmann::json unlaunched(const std::string& mangled, const std::string& demangled);
nlohmann::json match(uint64_t index, const std::string& mangled);
nlohmann::json error(const std::string& what);
nlohmann::json captured(const std::string& dir, bool keep_running);
nlohmann::json stopping();

// One process's "start" line.
struct Start {
  int64_t pid = 0;
  std::string mode;
  std::string tool;  // "" when the library predates versioned events
  int protocol = 0;  // 0 when the library predates versioned events
  int64_t rank = -1;        // `extract --rank` only: the process's rank (-1: unknown or not asked)
  std::string rank_source;  // the launcher variable it came from, or "cuInit order"
  bool selected = true;     // false: not the asked rank, the process ran untouched
};

// Everything the launcher learns from the events of all processes.
struct Log {
  std::vector<Start> starts;
  std::vector<std::string> seen;     // distinct kernel names (demangled when known), first-seen order
  std::set<uint64_t> matches;        // match indices
  std::vector<std::string> ignored;  // mangled names
  struct Skip {
    std::string mangled;
    std::string reason;  // name(SkipReason), "" from a library that predates reasons
  };
  std::vector<Skip> skipped;  // one per skipped launch
  std::vector<std::string> unlaunched;  // demangled names (mangled when not given), distinct
  std::vector<std::string> errors;
  bool graph_launch = false;
  bool captured = false;
  bool stopping = false;
  size_t unreadable_lines = 0;  // not JSON (a line cut by a crash) or not an object
};

// `target` >= 0: only what concerns that target of a run of several (lines about other
// targets are left out); -1: every line.
void add_line(Log& log, std::string_view line, int target = -1);
void add_stream(Log& log, std::istream& in, int target = -1);
// Every events-*.jsonl in `state_dir` (OUT/.kerncap); a missing folder gives an empty log.
Log read_dir(const std::filesystem::path& state_dir, int target = -1);

}  // namespace kerncap::format::events
