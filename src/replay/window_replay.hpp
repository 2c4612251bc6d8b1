#pragma once
// Replaying a window of launches (format/window.hpp, docs/window.md) in an open Session: the
// session reserves the captured addresses, restores BEFORE (the window's start) and compares
// with AFTER (its end) as for one launch; this adds the window's operations — each kernel
// with its own image, parameters (pointers into moved ranges rewritten) and attributes, the
// memsets, device-to-device copies and host-to-device copies (from the bytes the capture kept)
// — enqueued in order, each on its stream: the window's own on the caller's stream, its other
// streams (format/window.hpp, version 2) on streams created here, joined by the window's
// event records and waits as the application's were. A kernel of the
// window may be replaced by a variant image (a swap). The one judge judges the result:
// launch() is the evaluation loop's caller launch (Evaluator::evaluate).
#include <cuda.h>

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "format/window.hpp"
#include "replay/session.hpp"
#include "replay/variant_image.hpp"
#include "replay/window_replacement.hpp"

namespace kerncap::replay {

// Times of the window in this replay (medians over iterations), three ways, because they answer
// different questions and an eager application's in-app window is mostly the host's gaps:
//   window_ms   the window's GPU span: every operation queued behind a spin kernel before the GPU
//               starts it, events only before the first and after the last (no host gap inside);
//   kernels_ms  the kernels' GPU time, by the one timing engine (timing.hpp, CUPTI records,
//               bytes put back before each run) with the L2 warm and cold; the state nearer the
//               in-app kernels' time is the one reported (nearer_cache);
//   op_ms       per operation: a kernel's CUPTI time with the operations run one at a time (the
//               previous operation's data in L2, as in the application); a memset's or copy's
//               events between operations (queued behind the spin kernel too).
struct WindowTiming {
  int iterations = 0;
  double window_ms = 0;             // median GPU span, first operation's start to last one's end
  double kernels_ms = 0;            // the kernels' GPU time in the state `cache`
  std::optional<double> kernels_warm_ms, kernels_cold_ms;  // the engine's medians, each state
  std::string kernels_method;       // the engine's method (cupti-activity, cuda-events+spin, ...)
  std::string cache, cache_why;     // warm or cold, and why
  std::vector<double> op_ms;        // median per operation
  std::string op_method;            // "cupti-activity (one operation at a time)" or "cuda-events"
};
class WindowReplay {
 public:
  // Loads every image the window's kernels need (the first launch's image is the session's
  // module: its globals are the capture's), and `swaps` (operation index -> variant image)
  // in place of the captured ones. Error(Input) for a swap of an operation that is no kernel,
  // a variant without the kernel, a parameter file of the wrong size; Error(Device) when the
  // driver refuses an image.
  // `replacement`: operations [from, to] run its launches instead (window_replacement.hpp); no
  // swap may fall inside it.
  WindowReplay(Session& s, format::Window window, const std::map<size_t, VariantImage>& swaps,
               const Replacement* replacement = nullptr);
  ~WindowReplay();
  WindowReplay(const WindowReplay&) = delete;
  WindowReplay& operator=(const WindowReplay&) = delete;

  const format::Window& window() const { return window_; }
  // Enqueues operations [begin, end) on `stream` (no wait). Parameters are relocated as the
  // session's last restore relocated memory (call after a restore).
  void enqueue(CUstream stream, size_t begin, size_t end);
  void enqueue(CUstream stream) { enqueue(stream, 0, window_.ops.size()); }
  // Operation `op` of the replaced run as captured, on `stream`: what a caller's replacement
  // (Replacement::call) asks for when it keeps one of the operations it stands in for (a GEMM
  // between a fused activation's two halves). Error(Usage) outside the replaced run.
  void enqueue_captured(CUstream stream, size_t op);
  // Kernels that enqueue(stream, op, op + 1) launches (a replacement's launches at its first
  // operation, none for the rest of it, memsets and copies).
  size_t kernels_at(size_t op) const;
  // `warmup` + `iterations` runs of the whole window, memory put back before each (the bytes
  // the window changes: StateReset); the session's memory is restored first.
  WindowTiming time(int warmup, int iterations);
  // For each region id in `regions`: the last operation of this replay that changed its bytes
  // (restored first, then replayed operation by operation, each region's bytes hashed after
  // each); absent when none did. Regions larger than `max_bytes` together are left out.
  std::map<uint32_t, size_t> last_writers(const std::vector<uint32_t>& regions, uint64_t max_bytes = 1ull << 30);
  // For each region id in `regions`: where the operation that last changed its bytes changes
  // along the bytes the window changed (writer_cuts, window_pieces.hpp), this replay restored and
  // run operation by operation, the changed span copied back after each. Regions are left out
  // (pointer cuts only) when their changed spans exceed `max_span` bytes together or span ×
  // operations exceeds `max_copy` bytes.
  std::map<uint32_t, std::vector<uint64_t>> last_writer_cuts(const std::vector<uint32_t>& regions,
                                                             uint64_t max_span = 64ull << 20,
                                                             uint64_t max_copy = 8ull << 30);
  // "op 2 gemm(float const*, ...)" for messages.
  std::string describe(size_t op) const;
  // Notes for the user: module globals the capture does not hold, swapped operations.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Kernel {
    CUfunction function = nullptr;
    std::vector<uint8_t> params;     // as captured
    std::vector<uint8_t> relocated;  // as launched
    std::vector<void*> ptrs;
    std::vector<CUlaunchAttribute> attrs;
    bool swapped = false;
    void* host = nullptr;  // a host-to-device copy's bytes, pinned (cuMemAllocHost)
  };
  CUfunction function_in(CUmodule module, const std::string& name, const std::string& desc);
  void load_replacement(const Replacement& r);
  bool replaced(size_t op) const { return replacement_ && op >= replacement_->from && op <= replacement_->to; }
  // An operation of the replaced run that the replacement runs as captured ({"op": N}).
  bool kept(size_t op) const;
  void enqueue_op(CUstream stream, size_t i);
  void time_span(WindowTiming& t, int warmup, int iterations);
  void time_ops(WindowTiming& t, int warmup, int iterations);
  void relocate();
  void create_streams();
  void release_streams();
  // Where operation `op` runs when the caller enqueues on `stream`: its own stream index 0 on
  // the caller's, the others on the streams this replay created.
  CUstream stream_of(CUstream stream, size_t op) const;

  Session& s_;
  format::Window window_;
  std::vector<Kernel> kernels_;  // per operation (empty function for memsets and copies)
  std::vector<CUmodule> modules_;  // loaded here (the session's own module is not among them)
  std::vector<std::string> notes_;
  // The replacement's launches, in order (their parameters built at relocate()).
  std::optional<Replacement> replacement_;
  struct NewLaunch {
    CUfunction function = nullptr;
    std::vector<uint8_t> params;
    std::vector<void*> ptrs;
  };
  std::vector<NewLaunch> new_launches_;
  // The window's streams other than its own (index k at side_[k - 1]), its events, and the
  // events forking them from and joining them into the caller's stream.
  std::vector<CUstream> side_;
  std::vector<CUevent> events_;
  CUevent fork_ = nullptr;
  std::vector<CUevent> joins_;
};

// Byte ranges of regions as the captured window leaves them, kept on the device: what
// --live-out auto does not judge (dead pieces of live regions, window_pieces.hpp) is put back
// after the judged replay, so those bytes compare equal whatever the replacement left there.
struct KeptRange {
  size_t region = 0;  // manifest index
  uint64_t offset = 0, size = 0;
};
class WindowKeptBytes {
 public:
  // Restores the session, runs `captured` (the window as captured), copies the ranges aside,
  // restores again.
  WindowKeptBytes(Session& s, WindowReplay& captured, std::vector<KeptRange> ranges);
  ~WindowKeptBytes();
  WindowKeptBytes(const WindowKeptBytes&) = delete;
  WindowKeptBytes& operator=(const WindowKeptBytes&) = delete;
  void put_back(CUstream stream) const;  // enqueues the copies into place
  uint64_t bytes() const { return bytes_; }

 private:
  Session& s_;
  std::vector<KeptRange> ranges_;
  CUdeviceptr scratch_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace kerncap::replay
