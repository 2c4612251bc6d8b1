// Profile mode of libkerncap.so: CUPTI activity records of every kernel (and memcpy/
// memset), written to OUTPUT/profile-<pid>.jsonl (format: src/format/profile_records.hpp).
//
// Rules for this file (it runs inside the application):
//  - Nothing throws out of start_profiler, a CUPTI callback, the atexit or the atfork
//    handlers: each is a one-line trampoline into a noexcept function that catches all.
//  - Never crash or change the application: on a CUPTI failure log it, write an "error"
//    line the CLI turns into advice, and leave the application running unprofiled.
//  - The state is allocated once and never freed: CUPTI's thread may hand us a buffer
//    while the process is exiting and static destructors run.
//  - Only the activity API: no per-launch callback, so the application thread pays only
//    CUPTI's own record-keeping; all formatting happens on CUPTI's buffer thread, in
//    ActivityRecorder (activity.cpp, unit tested with fake records). API records are on
//    only inside the Triton shim's benchmark windows (profile_benchmark_begin).
//  - exit() from any thread runs our atexit handler, which forces CUPTI to flush. fork():
//    the child cannot use CUDA, drops the parent's unwritten bytes and writes its own
//    (empty) file; a child that execs is a new process and loads us afresh.
#include "capture/profiler.hpp"
#include "capture/rank_gate.hpp"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include <cupti.h>

#include "capture/activity.hpp"
#include "capture/cupti_check.hpp"
#include "common/log.hpp"
#include "format/profile_records.hpp"

namespace kerncap::capture {
namespace {

constexpr size_t kBufferBytes = 8u << 20;  // CUPTI fills these; few, large buffers keep overhead low
constexpr size_t kBufferAlign = 8;         // CUPTI requires 8-byte aligned buffers

struct Profiler {
  format::RecordWriter writer;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<bool> collecting{false};
  std::atomic<bool> forked_child{false};
  std::atomic<bool> windows{false};  // external correlation records enabled
  // CUPTI writes an external-correlation record only along with an API activity record, so
  // the driver and runtime API kinds are on while some thread is inside a window (only then:
  // one record per API call is too much to pay for the whole run).
  std::mutex window_mu;
  int window_depth = 0;
};
Profiler* g_profiler = nullptr;  // set once in start_profiler, never freed

// The CUPTI side of ActivityBuffer: one completed buffer.
class CuptiActivityBuffer final : public ActivityBuffer {
 public:
  CuptiActivityBuffer(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid)
      : ctx_(ctx), stream_(stream), buffer_(buffer), valid_(valid) {}
  bool next(CUpti_Activity** record) override {
    return valid_ && KC_CUPTI(cuptiActivityGetNextRecord(buffer_, valid_, record), CUPTI_ERROR_MAX_LIMIT_REACHED);
  }
  size_t dropped() override {
    size_t n = 0;
    return KC_CUPTI(cuptiActivityGetNumDroppedRecords(ctx_, stream_, &n)) ? n : 0;
  }

 private:
  CUcontext ctx_;
  uint32_t stream_;
  uint8_t* buffer_;
  size_t valid_;
};

void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  // Zeroed by calloc (fresh pages from the kernel: no memset), so CUPTI need not clear it on
  // the application's thread (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, set in start).
  static_assert(kBufferAlign <= alignof(std::max_align_t));
  *buffer = static_cast<uint8_t*>(std::calloc(1, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // no memory: CUPTI drops records and counts them
  *max_records = 0;                    // as many as fit
}

void buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid) noexcept {
  CuptiActivityBuffer records(ctx, stream, buffer, valid);
  ActivityRecorder(g_profiler->writer).drain(records);
  std::free(buffer);
}

void at_exit() noexcept {
  try {
    Profiler* p = g_profiler;
    if (p->forked_child) {
      p->writer.finish("exit (forked child)");
      return;
    }
    // Whatever thread called exit(): everything CUPTI holds, including records of
    // kernels still running, is delivered to buffer_completed before we return.
    if (p->collecting.exchange(false)) KC_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    p->writer.finish("exit");
  } catch (...) {
  }
}

void before_fork() noexcept { g_profiler->writer.lock_for_fork(); }
void after_fork_parent() noexcept { g_profiler->writer.unlock_in_parent(); }
void after_fork_child() noexcept {
  g_profiler->forked_child = true;
  g_profiler->collecting = false;  // CUDA (and CUPTI's thread) do not survive fork
  g_profiler->writer.reset_in_child();
}

format::ProcessInfo self_info() {
  format::ProcessInfo info;
  info.pid = ::getpid();
  info.ppid = ::getppid();
  if (const format::ProcessRank r = read_process_rank(); r.rank) {  // per-rank columns of `kerncap profile`
    info.rank = static_cast<int64_t>(*r.rank);
    info.rank_source = r.source;
  }
  std::error_code ec;
  info.exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t pos = 0; pos < all.size();) {
    size_t end = all.find('\0', pos);
    if (end == std::string::npos) end = all.size();
    info.cmdline.push_back(all.substr(pos, end - pos));
    pos = end + 1;
  }
  return info;
}

// Another CUPTI client owns the process (Nsight Systems/Compute, cuda-gdb,
// compute-sanitizer, or an in-application profiler that got there first).
void report_other_subscriber(const char* other) {
  std::string who = other && *other ? std::string(" (") + other + ")" : std::string();
  std::string msg = "another CUPTI client" + who +
                    " is active in this process: only one tool can collect kernel activity at a time. "
                    "Run the application without Nsight Systems / Nsight Compute / cuda-gdb / "
                    "compute-sanitizer, and with the PyTorch profiler (or any in-app CUPTI user) disabled";
  log::warn("profile: {}", msg);
  g_profiler->writer.error("multiple_subscribers", msg);
}

void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// CUPTI wants plain function pointers; these forward to the noexcept handlers above.
void CUPTIAPI on_buffer_requested(uint8_t** b, size_t* s, size_t* m) { buffer_requested(b, s, m); }
void CUPTIAPI on_buffer_completed(CUcontext c, uint32_t st, uint8_t* b, size_t, size_t v) {
  buffer_completed(c, st, b, v);
}

bool start(const Config& config) {
  if (g_profiler) return true;  // once per process
  g_profiler = new Profiler;
  Profiler& p = *g_profiler;
  if (!p.writer.open(config.output, self_info())) return false;

  // Subscribing claims CUPTI for this process, and is how another client is detected.
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "kerncap profile";
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof(other);
  CuptiStatus s = KC_CUPTI(cuptiSubscribe_v2(&p.subscriber, &ignore_callback, nullptr, &params),
                           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  if (s.result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    report_other_subscriber(other);
    p.writer.finish("error");
    return false;
  }
  auto fail = [&](CuptiStatus st, const char* what) {
    p.writer.error("cupti", std::string(what) + " failed: " + cupti_error_text(st.result));
    p.writer.finish("error");
    return false;
  };
  if (!s) return fail(s, "cuptiSubscribe_v2");
  // Per-launch cost is CUPTI's own (profile mode has no per-launch callback): keep it at its
  // least. Our buffers come zeroed; on GPUs with the hardware event system (Blackwell and
  // later) kernel timestamps come from it instead of instrumentation (elsewhere the call
  // answers "not supported" and nothing changes).
  uint8_t zeroed = 1;
  size_t zeroed_size = sizeof(zeroed);
  KC_CUPTI(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size, &zeroed));
  if (CuptiStatus r = KC_CUPTI(cuptiActivityRegisterCallbacks(&on_buffer_requested, &on_buffer_completed)); !r)
    return fail(r, "cuptiActivityRegisterCallbacks");
  // Any refusal (not this GPU, not yet initialised, virtualised...) only keeps the default.
  if (cuptiActivityEnableHWTrace(1) == CUPTI_SUCCESS)
    log::debug("profile: kernel timestamps from the hardware event system");
  // DEVICE first so device names precede the kernels in the file.
  KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE));
  if (CuptiStatus r = KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)); !r)
    return fail(r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
  // Context for the trace only: their absence loses nothing the table needs.
  KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
  KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  // Benchmark windows (profile_benchmark_begin): without it they are simply not told apart.
  p.windows = static_cast<bool>(KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)));

  p.collecting = true;
  std::atexit(&at_exit);
  pthread_atfork(&before_fork, &after_fork_parent, &after_fork_child);
  log::debug("profile: collecting kernel activity into {}", config.output);
  return true;
}

}  // namespace

// Nested windows push nested ids; CUPTI links a call to the innermost, all of the same kind.
void profile_benchmark_begin() noexcept {
  try {
    Profiler* p = g_profiler;
    if (!p || !p->collecting || !p->windows) return;
    {
      std::lock_guard lk(p->window_mu);
      if (p->window_depth++ == 0) {
        KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
        KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
      }
    }
    KC_CUPTI(cuptiActivityPushExternalCorrelationId(kBenchmarkCorrelationKind, 1));
  } catch (...) {
  }
}

void profile_benchmark_end() noexcept {
  try {
    Profiler* p = g_profiler;
    if (!p || !p->collecting || !p->windows) return;
    uint64_t last = 0;
    KC_CUPTI(cuptiActivityPopExternalCorrelationId(kBenchmarkCorrelationKind, &last), CUPTI_ERROR_QUEUE_EMPTY);
    std::lock_guard lk(p->window_mu);
    if (p->window_depth > 0 && --p->window_depth == 0) {
      KC_CUPTI(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER));
      KC_CUPTI(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME));
    }
  } catch (...) {
  }
}

bool start_profiler(const Config& config) {
  try {
    return start(config);
  } catch (const std::exception& e) {
    log::warn("profile: cannot start ({}); the application runs unprofiled", e.what());
  } catch (...) {
    log::warn("profile: cannot start; the application runs unprofiled");
  }
  return false;
}

}  // namespace kerncap::capture
