#pragma once
// `kerncap extract` without the printing: check the request, prepare OUT, run the
// application with the library injected, refuse a library of another protocol, explain
// a missing capture, then write the Triton and C++ reproducers.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "extract/environment.hpp"
#include "extract/launcher.hpp"
#include "extract/source_step.hpp"
#include "extract/targets.hpp"
#include "format/capture_dir.hpp"
#include "format/events.hpp"

namespace kerncap::extract {

struct Request {
  std::string kernel;             // one target (run_capture), or
  std::vector<TargetRequest> targets;  // several (run_captures)
  std::string cmd;                // the application as one shell command line, or
  std::vector<std::string> argv;  // as an argument vector (exactly one of the two)
  fs::path output;
  uint64_t dispatch = 0;
  bool regex = false;
  bool keep_running = false;
  bool closure_all = false;  // --closure all: store every tracked region
  uint64_t window_observe = 256;  // a window (window_run.hpp): later launches watched for reads (--observe)
  fs::path store;            // --store: a shared chunk store (empty: KERNCAP_STORE, else OUT/capture/chunks)
  int64_t rank = -1;  // --rank: capture only in that rank's process (format/rank.hpp)
  int device = -1;    // --device: count only launches on that CUDA device ordinal
  bool force = false;
  int verbose = 1;  // the library's verbosity
  bool quiet = false;  // only errors
  bool terse = false;  // no success notes on stderr (stdout carries JSON)
  SourceOptions source;
  fs::path kerncap;  // the binary the reproducer's Makefile calls
};

struct Result {
  fs::path out;
  format::Capture capture;
  AppExit app;
  bool stopped = false;  // the library ended the application after the capture
  int64_t rank = -1;     // --rank: the rank that captured
  std::string rank_source;  // where that process's rank came from (RANK, ..., "cuInit order")
  Outcome reproducer;
};

// OUT must be new or empty, or `force` removes what an earlier extract wrote there
// (format::out::force_replaced) and keeps everything else. Throws Error(Usage).
void prepare_output(const fs::path& out, bool force);

// Throws Error(Usage) for a bad request, Error(Input) when nothing was captured (with
// diagnose()'s message) or the library speaks another protocol.
Result run_capture(const Request& r);

// The application run once with the capture library, as run_capture and run_window
// (window_run.hpp) both start it: the request checked, OUT prepared, the library's
// configuration (library_config, then `configure`), the application run with it injected (the
// Triton shim beside it when `triton_shim`), the library's protocol checked and, when no
// capture was published, its partial directories removed and Error(Input) thrown with
// diagnose()'s message. `what` names the target in the line printed before the run.
struct CaptureStart {
  fs::path out;  // absolute
  HostEnv host;
  format::events::Log log;
  AppExit app;
};
CaptureStart start_capture(const Request& r, const std::function<void(format::Config&)>& configure,
                           const std::string& what, bool triton_shim);

// Shared by run_capture and run_captures (multi_run.hpp).
void check_request(const Request& r);
std::optional<fs::path> chunk_store(const Request& r);  // --store, else KERNCAP_STORE; absolute
format::Config library_config(const Request& r, const fs::path& out);

}  // namespace kerncap::extract
