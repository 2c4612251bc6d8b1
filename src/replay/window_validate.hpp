#pragma once
// `kerncap window validate`, once (docs/window.md "Validate"): the window replayed in an open
// Session — with kernels swapped, or a run of operations replaced by new launches or by the
// caller's own launch (a Python callable through the C ABI, include/kerncap/window.h) — judged
// by the one judge (Evaluator) against AFTER on the regions chosen by --live-out, strong when
// the probe finds write-only bytes (window_poison.hpp), the failing regions' last writers named,
// the window timed beside the captured one. The CLI and the C ABI both call validate_window and
// print what window_verdict_json / window_verdict_text make of its result: one judge, one
// verdict document.
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/window.hpp"
#include "format/window_liveout.hpp"
#include "replay/evaluate.hpp"
#include "replay/judge.hpp"
#include "replay/session.hpp"
#include "replay/variant_image.hpp"
#include "replay/window_pieces.hpp"
#include "replay/window_poison.hpp"
#include "replay/window_replay.hpp"

namespace kerncap::replay {

inline constexpr const char* kWindowVerdictFormat = "kerncap-window-verdict";
inline constexpr int kWindowVerdictVersion = 1;

struct WindowValidateRequest {
  std::string dir;                     // for messages
  std::string live_out = "all";        // all | auto | ID,...
  std::map<size_t, VariantImage> swaps;
  std::optional<Replacement> replacement;  // launches, or the caller's launch (Replacement::call)
  JudgeOverrides judge;                // dtype, atol, rtol, exact (no_determinism is forced)
  bool weak = false;                   // no poison probe
  int warmup = 3, iterations = 20;
  // Called with the replay that runs the replacement once it exists, and with null before it
  // ends: the C ABI's kc_window_enqueue_op runs a captured operation through it.
  std::function<void(WindowReplay*)> on_replay;
};

// A piece of a region the observation saw read as a whole but not in these bytes.
struct WindowDeadPiece {
  uint32_t region = 0;
  size_t index = 0;  // manifest order
  WindowPiece piece;
};

struct WindowValidation {
  format::Window window;
  std::optional<format::WindowLiveOut> observed;
  std::optional<std::set<uint32_t>> live;  // nullopt: all
  std::string live_out_mode;               // all, auto, list
  Evaluation evaluation;                   // regions outside `live` removed
  std::vector<uint32_t> ignored;           // outside `live` and differing
  std::vector<WindowDeadPiece> pieces;     // dead pieces of live regions
  std::optional<uint64_t> kept_bytes;      // under auto: the dead pieces' bytes put back (not judged)
  std::optional<WindowPoison> poison;      // nullopt: --weak
  std::string strength, line;
  bool pass = false;
  std::map<uint32_t, std::string> last_writers;  // failing region -> "op 3 gemm(...)"
  std::map<uint32_t, size_t> last_writer_ops;
  WindowTiming timing;
  std::optional<WindowTiming> captured_timing;  // with a swap or a replacement
  std::vector<std::string> notes;
  std::vector<std::pair<size_t, std::string>> swaps;  // op, image description
  std::optional<Replacement> replacement;
};

// --live-out all | auto | ID,... : the regions judged (nullopt: all). Error(Usage) for a bad
// list, Error(Input) for auto without an observation.
std::optional<std::set<uint32_t>> parse_window_live_out(const std::string& s, const format::Manifest& m,
                                                        const std::optional<format::WindowLiveOut>& observed,
                                                        const std::string& dir);

// The whole validation in session `s` (opened on the window's capture).
WindowValidation validate_window(Session& s, const format::Window& window, const WindowValidateRequest& r);

// `kerncap window validate --json`'s document.
nlohmann::json window_verdict_json(const WindowValidation& v);
// Its text (without the notes and foreign-operation warnings, which go to stderr).
std::string window_verdict_text(const WindowValidation& v);

// The replay's times against the in-app ones (window replay and validate).
nlohmann::json window_timing_json(const WindowTiming& t, const format::Window& w);
std::string window_times_text(const WindowTiming& t, const format::Window& w);

// What the caller's replacement receives (the C ABI's kc_window_info): the regions where this
// replay placed them (id, captured and replay address, size, kind, bytes the window changed)
// and each operation, a kernel's parameter bytes as launched (hex) with the words that point
// into a region.
nlohmann::json window_buffers_json(Session& s, const format::Window& w);

}  // namespace kerncap::replay
