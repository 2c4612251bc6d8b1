#pragma once
// A window bounded by an NVTX range (`kerncap window extract --range NAME[@N]`,
// KERNCAP_WINDOW_RANGE, docs/window.md): the operations the window's stream ran from the first
// kernel launch the pushing thread issued after the Nth push (from 0) of a range named NAME to
// that range's pop on the same thread. torch.cuda.nvtx.range_push/range_pop (and
// torch.autograd.profiler.emit_nvtx's ranges, one per ATen op) are nvtxRangePushA and
// nvtxRangePop; nvtx3's C++ scoped_range is nvtxDomainRangePushEx and nvtxDomainRangePop.
//
// How the calls reach kerncap: NVTX hands them to the library NVTX_INJECTION64_PATH names; the
// launcher sets it to libkerncap.so (extract/environment.cpp), whose InitializeInjectionNvtx2
// hands NVTX to CUPTI's (window_nvtx_inject.cpp), and CUPTI delivers them to kerncap's one
// subscriber in its NVTX callback domain (window_mode.cpp). No CUDA call here: the decisions
// (which push opens, which pop closes, which launch begins the window) are unit tested with
// fake NVTX and launch callbacks (tests/unit/capture_window_nvtx_test.cpp).
#include <cupti.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "capture/config.hpp"
#include "capture/seams.hpp"

namespace kerncap::capture {

class WindowRecorder;

// One NVTX call as the range window sees it (CUPTI_CB_DOMAIN_NVTX's functionParams, by id).
struct NvtxCall {
  enum class Kind { Other, Push, Pop };
  Kind kind = Kind::Other;
  const void* domain = nullptr;  // nvtxDomainHandle_t; nullptr: the default domain
  std::string message;           // a push's text (ASCII or wide, as UTF-8; empty: none or registered)
  bool registered = false;       // the push names a registered string handle (not read)
};
// Reads a CUPTI NVTX callback's parameters (`params`: CUpti_NvtxData::functionParams). The
// message is the application's text: read up to kMaxNvtxMessage characters.
NvtxCall decode_nvtx_call(CUpti_CallbackId cbid, const void* params);
inline constexpr size_t kMaxNvtxMessage = 4096;
// The NVTX callback ids a range window enables.
std::vector<CUpti_CallbackId> nvtx_range_callback_ids();

// Whether a range's text names the window's range: equal to NAME, or NAME followed by ", "
// (emit_nvtx appends ", seq = N" and the like to an op's name); with `regex`, NAME searched as
// an ECMAScript regular expression.
class NvtxRangeName {
 public:
  NvtxRangeName(std::string name, bool regex);
  bool matches(const std::string& text) const;

 private:
  std::string name_;
  std::optional<std::regex> regex_;
};

class RangeWindow {
 public:
  // `recorder` is the window's target (its begin() at the window's first launch, end_now() at
  // the range's pop); `on_open` (optional) runs when the range opens, before that launch: kernel
  // records on for the in-app times.
  RangeWindow(const Config& config, LaunchQueries& driver, WindowRecorder& recorder, void (*on_open)() = nullptr);

  // An NVTX callback on the calling thread (`thread`: std::this_thread::get_id() in the
  // library, a made-up one in tests). A pop that closes the window ends it through the
  // recorder (its capture: AFTER and the publication) before returning.
  void on_nvtx(CUpti_CallbackId cbid, const void* data, std::thread::id thread);
  // Every driver callback, after the recorder has seen it: the window's first launch.
  void on_driver(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, std::thread::id thread);
  // The application is ending: says why no window was captured, when none was.
  void at_exit();

  uint64_t pushes_matched() const;

 private:
  struct Key {
    std::thread::id thread;
    const void* domain;
    bool operator<(const Key& o) const { return thread < o.thread || (thread == o.thread && domain < o.domain); }
  };
  enum class Phase { Waiting, Armed, Begun, Closed };

  const Config& config_;
  LaunchQueries& driver_;
  WindowRecorder& recorder_;
  void (*on_open_)();
  NvtxRangeName name_;
  mutable std::mutex mu_;
  Phase phase_ = Phase::Waiting;
  std::map<Key, uint64_t> depth_;  // open pushes per thread and domain
  Key window_key_{};
  uint64_t window_depth_ = 0;      // the depth below the window's push
  uint64_t matched_ = 0;           // pushes whose text matched
  uint64_t calls_ = 0;             // NVTX calls seen (0 at exit: NVTX never reached kerncap)
  uint64_t launches_ = 0;          // launches before the window's first (its launch index)
  uint64_t launches_in_range_ = 0; // launches the pushing thread issued in the range on a capturing stream
  CUcontext context_ = nullptr;    // the window's first launch's
};

}  // namespace kerncap::capture
