#pragma once
// The contract between kerncap and the processes it starts: every KERNCAP_* variable
// (name, who reads it, syntax, default, meaning, parser) in one table, the Config the
// injected library reads from them, and the protocol version. The names are spelled in
// protocol.cpp and nowhere else in C++.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/profile_cupti.hpp"
#include "format/swaps.hpp"

namespace kerncap::format {

// Bumped whenever the library's events, its variables or what it writes under OUT/
// change incompatibly: the CLI refuses a library that speaks another protocol.
// 2: KERNCAP_TARGETS (several targets in one run) and the "target" field of events.
inline constexpr int kProtocolVersion = 2;

// The version of KERNCAP_TARGETS's value ({"version": N, "targets": [...]}).
inline constexpr int kTargetsVersion = 1;
// The most targets one run takes (each holds a claim, a matcher and a count in the library).
inline constexpr size_t kMaxTargets = 64;

// How a target's pattern names kernels (names/match.hpp).
enum class MatchKind { Substring, Regex, Exact };
std::string_view to_string(MatchKind m);
std::optional<MatchKind> match_kind_from_string(std::string_view s);

// One target of a run of several (`extract --kernel A --kernel B`, `--top N --from`).
struct TargetSpec {
  std::string kernel;                    // the pattern
  MatchKind match = MatchKind::Substring;
  uint64_t dispatch = 0;                 // which matching launch (0 = first)
  std::string output;                    // this target's OUT (absolute), created by the launcher
  bool operator==(const TargetSpec&) const = default;
};

// A kernel name pattern with no launch count: profile mode's parameter signatures
// (Config::profile_params, KERNCAP_PROFILE_PARAMS).
struct KernelPattern {
  std::string kernel;
  MatchKind match = MatchKind::Substring;
  bool operator==(const KernelPattern&) const = default;
};
// The version of KERNCAP_PROFILE_PARAMS's value ({"version": N, "kernels": [...]}).
inline constexpr int kProfileParamsVersion = 1;

enum class Mode { Off, Capture, Profile };
std::string_view to_string(Mode m);

// The injected library's whole configuration.
struct Config {
  Mode mode = Mode::Off;
  std::string output;                    // directory the launcher created
  std::string kernel;                    // substring (or regex) of the kernel name
  bool regex = false;                    // `kernel` is an ECMAScript regex
  // `kernel` is a whole mangled name (a target of `extract --top`): set only in a per-target
  // copy (config_for_target), never from the environment; the manifest's config says
  // "match": "exact" then, where `regex` alone would read as a substring match.
  bool exact = false;
  uint64_t dispatch = 0;                 // which matching launch (0 = first)
  bool keep_running = false;             // let the application go on after the capture
  int verbose = 0;                       // 0 quiet, 1 progress, 2 debug
  uint32_t chunk_bytes = 4096;           // change-detection granularity
  uint64_t staging_bytes = 64ull << 20;  // pinned staging buffer
  bool dump_images = false;              // save every loaded code image (debugging)
  bool device_scan = true;               // snapshots skip zero and unchanged chunks (GpuScanner)
  bool closure_all = false;              // keep every region, not only those the launch can reach
  // Multi-process jobs (format/rank.hpp): capture only in the process of this rank (-1:
  // every process may), and count only launches on this CUDA device ordinal of the process
  // (-1: every device).
  int64_t rank = -1;
  int device = -1;
  std::string store;                     // shared chunk store directory ("": OUT/capture/chunks)
  int zstd_level = 1;                    // of the BEFORE chunks (0: uncompressed)
  // When capture mode starts CUPTI kernel records for the in-app time (the manifest's
  // in_app_*): at the first launch whose name matches (default), at start-up, or never.
  enum class InAppTime { Match, Start, Off };
  InAppTime in_app_time = InAppTime::Match;
  // Several targets in one run (KERNCAP_TARGETS): each with its own OUT; `output` is then
  // their parent (events, image dumps) and kernel/regex/dispatch are unused. Empty: the
  // one target is kernel/regex/dispatch into `output`.
  std::vector<TargetSpec> targets;
  // Profile mode's CUPTI settings (diagnostic: profile_cupti.hpp).
  ProfileCupti profile_cupti;
  // Profile mode's sampled timing (`profile --sample N`): 0, every launch is timed; N >= 2:
  // every launch is counted, and once the process is launch-heavy kernel records are on for
  // one launch window in every N (docs/profile.md, "Sampled timing").
  uint32_t profile_sample = 0;
  // Profile mode (`extract --regimes`'s profiled run): the kernels whose launches also get a
  // parameter signature, the words of their parameters that are not pointers ("p" lines of
  // the records, capture/param_signature.hpp). Empty: none (no launch callback for it).
  std::vector<KernelPattern> profile_params;
  // A window of launches (`kerncap window extract`, docs/window.md): the capture begins at the
  // target (kernel/dispatch) and ends at the `window_end_dispatch`-th launch (from 0, counted
  // from the target on its stream) whose name matches `window_end`; empty: one launch.
  std::string window_end;
  uint64_t window_end_dispatch = 0;
  // After a window: how many later launches the library watches for reads of the window's
  // results (`--live-out auto`, window_liveout.json); 0: none.
  uint64_t window_observe = 256;
  // A window of one CUDA graph launch (`kerncap window extract --graph`, docs/window.md): the
  // `window_graph_launch`-th launch (from 0) among the executable graphs that hold a kernel
  // matching `window_graph_kernel` (empty: every graph launch counts; a regex with `regex`).
  bool window_graph = false;
  uint64_t window_graph_launch = 0;
  std::string window_graph_kernel;
  // A window of one NVTX range (`kerncap window extract --range`, docs/window.md): from the
  // first kernel launch after the `window_range_occurrence`-th push (from 0) of a range named
  // `window_range` (a regex with `regex`) to that range's pop, on the pushing thread; empty: none.
  std::string window_range;
  uint64_t window_range_occurrence = 0;
  // Profile mode only (`kerncap run --swap`, format/swaps.hpp): kernels served from variant
  // images while the application runs. Empty: none.
  std::vector<SwapSpec> swaps;
  // In a per-target copy the library makes for each target's capture (never from the
  // environment): the target's index, for the events and the manifest's config (-1: one target).
  int target_index = -1;

  // The variables that give a process this configuration (defaults of the tuning
  // variables are left out, so a user's own setting of them passes through).
  std::map<std::string, std::string> to_env() const;
  nlohmann::json to_json() const;
};

enum class Var { Mode, Output, Kernel, Regex, Dispatch, Continue, Rank, Device, Verbose, ChunkBytes, StagingBytes,
                 DumpImages, DeviceScan, Closure, Store, ZstdLevel, InAppTime, Targets, TritonOut, Library, PythonDir, Python, Serve, Bin, ReplayLib,
                 Window, WindowObserve, WindowGraph, WindowRange, ProfileCupti, ProfileSample, ProfileParams, Swaps, RunArm, RunIndex, RunDir, RunStdout };

// Who reads a variable (bits).
inline constexpr unsigned kLibrary = 1, kCli = 2, kTritonShim = 4, kPythonApi = 8;
// The user's `kerncap run --check` command (set for it, read by nothing of kerncap's).
inline constexpr unsigned kCheckCommand = 16;

struct EnvVar {
  Var id;
  std::string_view name;
  unsigned readers;              // the k* bits above
  bool set_by_launcher;          // `kerncap extract/profile` set it for the application
  std::string_view syntax;       // "capture, profile", "0, 1", "count", "path", ...
  std::string_view default_text; // empty: unset
  std::string_view meaning;
  // Library variables: parse into a Config (returns the problem, or ""), and print back.
  std::string (*parse)(std::string_view value, Config& c);
  std::optional<std::string> (*print)(const Config& c);
};

std::span<const EnvVar> env_vars();
const EnvVar& env_var(Var v);
std::string_view env_name(Var v);
std::vector<std::string> reader_names(unsigned readers);

// Reads a Config through `lookup` (getenv in the library, a map in tests). Never throws:
// malformed values keep their default and are reported in `problems`.
using EnvLookup = std::function<const char*(std::string_view name)>;
Config config_from_env(const EnvLookup& lookup, std::vector<std::string>* problems = nullptr);

// `kerncap env` as text, as docs/env.md (a unit test compares them) and as JSON (which
// python/tests checks the Python constants against).
// KERNCAP_STORE as the CLI and the replay engine read it (the shared chunk store a capture's
// chunks are in, chunk_store.hpp); none when unset or empty.
std::optional<std::string> store_from_env();
// KERNCAP_SERVE as `kerncap validate` reads it (auto, off); none when unset or empty.
std::optional<std::string> serve_from_env();

// The targets a Config names: Config::targets, else the one of kernel/regex/dispatch/output.
std::vector<TargetSpec> effective_targets(const Config& c);
// The configuration of one target's capture: Config::targets[target]'s output, pattern
// and dispatch in place of the run's, target_index set (-1 or out of range: `run` itself).
Config config_for_target(const Config& run, int target);
// KERNCAP_TARGETS's value, and its strict reader (the problem, or "").
std::string targets_to_text(const std::vector<TargetSpec>& targets);
std::string targets_from_text(std::string_view text, std::vector<TargetSpec>* out);
// KERNCAP_PROFILE_PARAMS's value, and its strict reader (the problem, or "").
std::string profile_params_to_text(const std::vector<KernelPattern>& kernels);
std::string profile_params_from_text(std::string_view text, std::vector<KernelPattern>* out);

std::string env_text();
std::string env_markdown();
nlohmann::json env_json();

}  // namespace kerncap::format
