#pragma once
// A window of launches (`kerncap window extract`, docs/window.md): the operations one stream
// of the application ran from the window's first kernel launch through its last, in order.
// It lives in the capture directory of the window's first launch as `window.json`, beside
// the files it names (window/op-NNN.params, image/<hash>.<kind>). The capture directory's
// manifest describes the first launch and holds the memory: BEFORE at the window's start
// (every tracked region) and AFTER at its end (every byte the window changed).
//
// Written by the capture library, read here as untrusted input: strict types, bounded
// counts and sizes, file names not read from the document but derived from the operation's
// index and the image's hash (so every name is confined to the directory by construction).
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/manifest.hpp"

namespace kerncap::format {

inline constexpr const char* kWindowFormat = "kerncap-window";
// Version 2: operations of several streams (each op's `stream`, the window's `streams`) and the
// event records and waits joining them (kinds event_record / event_wait, `events`). Version 1
// (one stream, no event operations) is still read.
inline constexpr int kWindowVersion = 2;
inline constexpr const char* kWindowFile = "window.json";
inline constexpr size_t kMaxWindowOps = 65536;           // operations in one window
inline constexpr uint64_t kMaxWindowParamBytes = 1 << 20; // one launch's parameter buffer (CUDA: 32 KiB)
inline constexpr uint64_t kMaxWindowH2DBytes = uint64_t{1} << 30;  // host bytes kept, all copies of a window
inline constexpr uint32_t kMaxWindowStreams = 64;        // streams joined into one window
inline constexpr uint32_t kMaxWindowEvents = 65536;      // events of one window (each is recorded by an op)
static_assert(kMaxWindowEvents >= kMaxWindowOps, "every event of a window is recorded by one of its operations");

// One operation of the window, in the order the application issued it (across its streams).
struct WindowOp {
  // EventRecord / EventWait: cuEventRecord of event `event` on the op's stream, or the op's
  // stream waiting (cuStreamWaitEvent) on that event's last record before it in the window.
  enum class Kind { Kernel, Memset, CopyD2D, CopyH2D, EventRecord, EventWait };
  Kind kind = Kind::Kernel;
  uint32_t stream = 0;  // the window's stream index: 0 = the window's own stream (FROM's)
  uint32_t event = 0;   // EventRecord / EventWait: the event's index in the window
  uint64_t launch_index = 0;  // among all kernel launches of the process (kernels only)
  // Kernel.
  std::string mangled;
  std::string image_kind;  // cubin | fatbin | ptx
  uint64_t image_hash = 0;
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  uint32_t shared_mem_bytes = 0;
  bool cooperative = false;
  std::vector<LaunchAttr> launch_attrs;
  std::vector<FuncAttr> func_attrs;
  std::vector<ParamSlot> params;  // empty: the buffer is passed as `extra`
  uint64_t params_size = 0;
  // The module globals of this launch's image that are not regions of the capture (an image
  // other than the first launch's): they start at their load-time values in a replay.
  std::vector<std::string> uncaptured_globals;
  // Memset: `count` elements of `element_size` (1, 2, 4) bytes of `value` at `dst`, rows of
  // `width` elements `pitch` bytes apart (height 1: one run). Copy: `bytes` from `src` to `dst`;
  // a host-to-device copy's source bytes are kept in window/op-NNNNNN.h2d (src: the host address,
  // informational).
  uint64_t dst = 0, src = 0;
  uint32_t value = 0, element_size = 1;
  uint64_t width = 0, height = 1, pitch = 0;
  uint64_t bytes = 0;
  // In-app GPU time of this operation (CUPTI kernel record), when known.
  std::optional<uint64_t> in_app_ns;
  std::optional<uint64_t> in_app_start_ns;  // relative to the window's first operation's start
  // A host-to-device copy's bytes while the capture holds them (never in window.json: written
  // to window_h2d_file at the window's end).
  std::shared_ptr<const std::vector<uint8_t>> host_bytes;
  // The key the capture library kept this kernel's parameter bytes under (its describe index,
  // never in window.json: the operation's index may change when other streams' ops are dropped).
  size_t params_key = SIZE_MAX;
};
std::string to_string(WindowOp::Kind k);

// The files of operation i (derived, never read from the document).
std::string window_params_file(size_t index);          // window/op-000042.params
std::string window_image_file(uint64_t hash, const std::string& kind);  // image/<16 hex>.<kind>
std::string window_h2d_file(size_t index);             // window/op-000042.h2d

// A window of one CUDA graph launch (`kerncap window extract --graph`): which launch (from 0,
// among the graph launches counted: every one, or those of graphs holding a kernel matching
// `from`) and how many nodes the graph has (the operations are its kernel, memset and copy
// nodes in a topological order).
struct WindowGraph {
  uint64_t launch = 0;
  uint64_t nodes = 0;
};
inline constexpr uint64_t kMaxWindowGraphNodes = uint64_t{1} << 24;

struct Window {
  int version = kWindowVersion;
  std::string from, to;            // the patterns
  uint64_t from_dispatch = 0, to_dispatch = 0;
  bool regex = false;
  uint64_t stream = 0;             // the application's stream handle (informational)
  // Version 2: how many streams the ops use (1: the window's own only) and events they name;
  // the application's handles of the streams (index 0 = `stream`; informational).
  uint32_t streams = 1, events = 0;
  std::vector<uint64_t> stream_handles;
  std::vector<WindowOp> ops;
  std::optional<WindowGraph> graph;  // set for a graph launch's window (then `to` is empty)
  // An NVTX range's window (`kerncap window extract --range`): `from` is the range's name (the
  // user's, as given), `from_dispatch` its push (from 0), `to` empty.
  bool range = false;
  // In-app time of the window at capture: the first operation's start to the last one's end,
  // and the sum of the kernels' own times (CUPTI records); absent when unknown.
  std::optional<uint64_t> in_app_window_ns, in_app_kernels_ns;
  // What ran in the process during the window but is not part of it: kernel launches on
  // other streams, host-to-device or other copies, graph launches. Said by validate, since
  // their writes are in AFTER but no replay makes them.
  uint64_t foreign_ops = 0;
  std::vector<std::string> foreign_examples;  // at most kMaxForeignExamples
  size_t kernels() const;
  // Whether operations [from, to] all lie on one stream and hold no event operation (what a
  // replacement may stand in for); `why` says which does not.
  bool one_stream_run(size_t from, size_t to, std::string* why) const;
};
inline constexpr size_t kMaxForeignExamples = 16;

// The window as the user named it: "FROM@N..TO@M", or "graph@N" / "graph PATTERN@N" for a
// graph launch's window (titles, `window info`, the reproducer).
std::string window_title(const Window& w);

nlohmann::json to_json(const Window& w);
// The strict reader: Error(Input) naming the field for anything that is not what the
// writer writes.
Window window_from_json(const nlohmann::json& j);
// Reads DIR/window.json (DIR: a capture directory), bounded; Error(Input) when absent or bad.
Window read_window(const std::filesystem::path& capture_dir);
// Whether a capture directory holds a window: false when there is no window.json, true for a
// plain file; Error(Input) when something else is there (a directory, link or FIFO of that name).
bool is_window_capture(const std::filesystem::path& capture_dir);
// For the one-launch commands and the engine's kc_open: Error(Input) when `dir` (OUT or
// OUT/capture) holds a window of launches, naming what refused it (`what`, e.g. "kerncap
// footprint") and the window command to use instead. A window's manifest describes its first
// launch but its AFTER (and its BEFORE's reach) is the window's: judged, timed, footprinted or
// pruned as one launch it would give wrong verdicts or drop bytes later operations read.
void refuse_window_capture(const std::filesystem::path& dir, std::string_view what, std::string_view instead);

}  // namespace kerncap::format
