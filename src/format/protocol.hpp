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

namespace kerncap::format {

// Bumped whenever the library's events, its variables or what it writes under OUT/
// change incompatibly: the CLI refuses a library that speaks another protocol.
inline constexpr int kProtocolVersion = 1;

enum class Mode { Off, Capture, Profile };
std::string_view to_string(Mode m);

// The injected library's whole configuration.
struct Config {
  Mode mode = Mode::Off;
  std::string output;                    // directory the launcher created
  std::string kernel;                    // substring (or regex) of the kernel name
  bool regex = false;                    // `kernel` is an ECMAScript regex
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

  // The variables that give a process this configuration (defaults of the tuning
  // variables are left out, so a user's own setting of them passes through).
  std::map<std::string, std::string> to_env() const;
  nlohmann::json to_json() const;
};

enum class Var { Mode, Output, Kernel, Regex, Dispatch, Continue, Rank, Device, Verbose, ChunkBytes, StagingBytes,
                 DumpImages, DeviceScan, Closure, Store, ZstdLevel, InAppTime, TritonOut, Library, PythonDir, Python, Bin, ReplayLib };

// Who reads a variable (bits).
inline constexpr unsigned kLibrary = 1, kCli = 2, kTritonShim = 4, kPythonApi = 8;

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

std::string env_text();
std::string env_markdown();
nlohmann::json env_json();

}  // namespace kerncap::format
