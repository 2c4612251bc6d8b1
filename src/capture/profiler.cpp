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
//    Sampled timing (Config::profile_sample) is the exception: a launch callback counts
//    every launch (LaunchSampler: a cached name id per function handle, runs of launches)
//    and switches the kernel records on and off. So are parameter signatures
//    (Config::profile_params, `extract --regimes`): the launch callback writes, for launches
//    of the kernels named, their scalar parameter words (ParamSignatures, "p" lines).
//  - exit() from any thread runs our atexit handler, which forces CUPTI to flush. fork():
//    the child cannot use CUDA, drops the parent's unwritten bytes and writes its own
//    (empty) file; a child that execs is a new process and loads us afresh.
#include "capture/profiler.hpp"
#include "capture/rank_gate.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>

#include <cupti.h>

#include "capture/activity.hpp"
#include "capture/cupti_check.hpp"
#include "capture/launch_info.hpp"
#include "capture/launch_sampler.hpp"
#include "capture/param_signature.hpp"
#include "capture/param_signature_driver.hpp"
#include "capture/shadow_driver.hpp"
#include "capture/swap_driver.hpp"
#include "capture/swapper.hpp"
#include "capture/tool_scope.hpp"
#include "capture/watcher.hpp"
#include "common/log.hpp"
#include "format/profile_cupti.hpp"
#include "format/profile_records.hpp"
#include "format/swaps.hpp"

namespace kerncap::capture {
namespace {

constexpr size_t kBufferAlign = 8;  // CUPTI requires 8-byte aligned buffers

struct Profiler {
  format::RecordWriter writer;
  // Each activity buffer's size (ProfileCupti::host_buffer, 8 MiB): CUPTI fills these; few,
  // large buffers keep overhead low.
  size_t buffer_bytes = 8u << 20;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::atomic<bool> collecting{false};
  std::atomic<bool> forked_child{false};
  std::atomic<bool> windows{false};  // benchmark windows can be told apart
  bool correlation_always = false;   // KERNCAP_PROFILE_CUPTI correlation=always (diagnostic)
  // CUPTI writes an external-correlation record only along with an API activity record, so
  // the driver and runtime API kinds are on while some thread is inside a window (only then:
  // one record per API call is too much to pay for the whole run).
  std::mutex window_mu;
  int window_depth = 0;
  // Sampled timing only (else null): the counter, and the kernel records' kind it switches.
  LaunchSampler* sampler = nullptr;
  // Parameter signatures only (else null): the kernels named and their caches.
  ParamSignatures* params = nullptr;
  CUpti_ActivityKind kernel_kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  // MEMCPY/MEMSET records are on (KERNCAP_PROFILE_CUPTI memory=0 turns them off). Sampled,
  // they follow the kernel records' windows: enabled, they cost about as much per kernel
  // launch as the kernel records themselves, on an application that copies nothing.
  bool memory_kinds = false;
  std::mutex switch_mu;
  bool records_on = true;  // as applied (under switch_mu)
  // `kerncap run --swap` (Config::swaps): the kernels served by variants, and where the
  // report goes at exit. Null without swaps.
  Swapper* swapper = nullptr;
  std::string output;
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
  const size_t bytes = g_profiler->buffer_bytes;
  *buffer = static_cast<uint8_t*>(std::calloc(1, bytes));
  *size = *buffer ? bytes : 0;  // no memory: CUPTI drops records and counts them
  *max_records = 0;                    // as many as fit
}

void buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid) noexcept {
  CuptiActivityBuffer records(ctx, stream, buffer, valid);
  ActivityRecorder(g_profiler->writer).drain(records);
  std::free(buffer);
}

// OUT/swap-<pid>.json: how many launches each swapped kernel made and how many the variant
// served (written whole to a temporary name, then renamed: a reader never sees half of it).
void write_swap_report(const Profiler& p) {
  const std::filesystem::path dir(p.output);
  const std::string name = format::swap_report_name(::getpid());
  const std::filesystem::path tmp = dir / (name + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << format::swap_report_json(p.swapper->report(::getpid())).dump() << "\n";
    if (!out.flush()) {
      log::warn("swap: cannot write {}", tmp.string());
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, dir / name, ec);
  if (ec) log::warn("swap: cannot write {}: {}", (dir / name).string(), ec.message());
}

void at_exit() noexcept {
  try {
    Profiler* p = g_profiler;
    if (p->forked_child) {
      p->writer.finish("exit (forked child)");
      return;
    }
    if (p->sampler) p->writer.runs(p->sampler->take_runs(true));
    if (p->swapper) write_swap_report(*p);
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
  if (g_profiler->sampler) g_profiler->sampler->take_runs(true);  // the parent's launches
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

// Sampled timing: the runs are written out in batches, on the launching thread (a batch
// every this many runs keeps that cost small per launch and the memory bounded).
constexpr size_t kRunBatch = 4096;

uint32_t intern_name(void* user, std::string_view mangled) {
  return static_cast<Profiler*>(user)->writer.name_id(mangled);
}
std::string resolve_name(const void* f) {
  ToolScope scope;
  DriverLaunchQueries q;
  return q.kernel_name(static_cast<CUfunction>(const_cast<void*>(f)));
}

// Stream capture's begin and end calls (the sampler keeps the count of open captures).
// Whether a launch's stream is being captured into a graph (asked only while a capture is open).
bool launch_is_captured(CUstream stream) {
  ToolScope scope;
  DriverLaunchQueries q;
  return q.stream_is_capturing(stream);
}

// Applies the sampler's wish under one lock, so two threads' switches keep their order.
void apply_records(Profiler& p) {
  std::lock_guard lk(p.switch_mu);
  const bool want = p.sampler->records_wanted();
  if (want == p.records_on) return;
  p.records_on = want;
  for (CUpti_ActivityKind kind : {p.kernel_kind, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
    if (kind != p.kernel_kind && !p.memory_kinds) continue;
    if (want) KC_CUPTI(cuptiActivityEnable(kind));
    else KC_CUPTI(cuptiActivityDisable(kind));
  }
}

void sample_callback(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) noexcept {
  try {
    Profiler* p = g_profiler;
    if (!p || !p->collecting || !p->sampler || t_in_tool) return;
    // A launch's exit (half of all callbacks) has nothing to do: answer it first.
    if (cb->callbackSite == CUPTI_API_EXIT && is_launch_cbid(cbid)) return;
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleUnload || cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload) {
      if (cb->callbackSite == CUPTI_API_EXIT) p->sampler->forget_handles();
      return;
    }
    if (follow_stream_capture(cbid, cb, p->sampler->captures())) return;
    if (cb->callbackSite != CUPTI_API_ENTER) return;
    LaunchSampler::Records r = LaunchSampler::Records::Keep;
    size_t pending = 0;
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) {
      r = p->sampler->on_graph_launch();
    } else {
      LaunchArgs args;
      if (!decode_launch(cbid, cb->functionParams, &args)) return;
      if (p->sampler->captures_open() && launch_is_captured(args.stream)) return;  // a graph node
      r = p->sampler->on_launch(args.f, cb->context, cb->symbolName, cb->correlationId, ignore_depth() > 0, &pending);
    }
    if (r != LaunchSampler::Records::Keep) apply_records(*p);
    if (pending > kRunBatch) p->writer.runs(p->sampler->take_runs(false));
  } catch (...) {
    // Out of memory: this launch is not counted; the application goes on.
  }
}

// A launch of a kernel Config::profile_params names: its signature, by correlation id (the
// kernel record's). Launches into a capturing stream get one too; no kernel record carries
// their id (a graph launch runs the kernel), so the reader leaves it unjoined.
void params_callback(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) noexcept {
  try {
    Profiler* p = g_profiler;
    if (!p || !p->collecting || !p->params || t_in_tool) return;
    if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleUnload || cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload) {
      if (cb->callbackSite == CUPTI_API_EXIT) p->params->forget_handles();
      return;
    }
    if (cb->callbackSite != CUPTI_API_ENTER || !is_launch_cbid(cbid)) return;
    LaunchArgs args;
    if (!decode_launch(cbid, cb->functionParams, &args)) return;
    std::string mangled;
    std::vector<format::ScalarWord> words;
    if (p->params->on_launch(args.f, args.kernel_params, args.extra, &mangled, &words))
      p->writer.params(mangled, cb->correlationId, words);
  } catch (...) {
    // Out of memory, or no driver: this launch has no signature (its regime is its shape).
  }
}

// Whatever the launch callbacks are on for: the signature first (it sees the application's
// own function), then the swap (so the sampler and the records see the launch as it runs),
// then sampled timing's counting. Each returns at once when it is off.
void CUPTIAPI on_launch_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  params_callback(cbid, cb);
  if (Swapper* s = g_profiler ? g_profiler->swapper : nullptr) s->on_callback(cbid, cb);
  sample_callback(cbid, cb);
}

// The launch callbacks sampled timing counts with (after the subscription).
bool enable_launch_callbacks(Profiler& p) {
  for (CUpti_CallbackId id : profile_callback_ids())
    if (!KC_CUPTI(cuptiEnableCallback(1, p.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id))) return false;
  return true;
}

// Sampled timing: the sampler, then its callbacks.
bool start_sampling(Profiler& p, uint32_t period) {
  p.sampler = new LaunchSampler(period, &intern_name, &resolve_name, &p);  // never freed, as g_profiler
  if (!enable_launch_callbacks(p)) return false;
  p.writer.sampling(period, format::kSampleExactLaunches, format::kSampleWindow);
  log::info("profile: sampled timing, one window of {} launches in {} after the first {}", format::kSampleWindow,
            period, format::kSampleExactLaunches);
  return true;
}

// KERNCAP_PROFILE_CUPTI's attributes (diagnostic; unset ones keep CUPTI's defaults). CUPTI
// reads them before the first context is made and before the buffer callbacks are
// registered, which is where start() calls this (inside cuInit). A refusal is logged.
void set_attributes(const format::ProfileCupti& t) {
  auto size_attr = [](CUpti_ActivityAttribute a, const std::optional<uint64_t>& v) {
    if (!v) return;
    size_t value = *v, size = sizeof(value);
    KC_CUPTI(cuptiActivitySetAttribute(a, &size, &value));
  };
  auto flag_attr = [](CUpti_ActivityAttribute a, const std::optional<bool>& v) {
    if (!v) return;
    uint8_t value = *v ? 1 : 0;
    size_t size = sizeof(value);
    KC_CUPTI(cuptiActivitySetAttribute(a, &size, &value));
  };
  size_attr(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, t.device_buffer);
  size_attr(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, t.pool_limit);
  size_attr(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, t.preallocate);
  flag_attr(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, t.per_thread);
  flag_attr(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, t.pinned);
  if (t.flush_ms) KC_CUPTI(cuptiActivityFlushPeriod(static_cast<uint32_t>(*t.flush_ms)));
  const std::string text = format::profile_cupti_text(t);
  if (!text.empty()) log::info("profile: CUPTI settings (diagnostic, KERNCAP_PROFILE_CUPTI): {}", text);
}

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
  const format::ProfileCupti& tuning = config.profile_cupti;
  p.buffer_bytes = tuning.host_buffer;

  // Subscribing claims CUPTI for this process, and is how another client is detected.
  // Sampled timing counts launches in its callbacks; KERNCAP_PROFILE_CUPTI's callback=empty
  // and callback=off (diagnostics) keep CUPTI's dispatch without our handler, or drop both.
  using Callback = format::ProfileCupti::Callback;
  const bool sampled = config.profile_sample >= 2 && tuning.kind != format::ProfileCupti::Kind::Off &&
                       tuning.callback == Callback::Full;
  const bool launch_callbacks = sampled || (config.profile_sample >= 2 && tuning.callback == Callback::Empty);
  if (!config.swaps.empty()) {
    p.output = config.output;
    // Never freed, as g_profiler.
    p.swapper = new Swapper(config.swaps, *new DriverSwapDriver, new DriverShadowDriver);
  }
  if (!config.profile_params.empty())
    p.params = new ParamSignatures(config.profile_params, *new DriverSignatureDriver);  // never freed, as g_profiler
  const Subscription sub = subscribe_named(p.swapper || sampled || p.params ? &on_launch_callback : &ignore_callback,
                                           nullptr, "kerncap profile");
  p.subscriber = sub.handle;
  const CuptiStatus s = sub.status;
  if (s.result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    report_other_subscriber(sub.other.c_str());
    p.writer.finish("error");
    return false;
  }
  auto fail = [&](CuptiStatus st, const char* what) {
    p.writer.error("cupti", std::string(what) + " failed: " + cupti_error_text(st.result));
    p.writer.finish("error");
    return false;
  };
  if (!s) return fail(s, "cuptiSubscribe_v2");
  if (p.swapper) {
    for (CUpti_CallbackId id : Swapper::callback_ids())
      if (CuptiStatus r = KC_CUPTI(cuptiEnableCallback(1, p.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id)); !r)
        return fail(r, "cuptiEnableCallback (swap)");
    log::info("swap: {} kernel(s) served by variants", config.swaps.size());
  }
  // Per-launch cost is CUPTI's own (profile mode has no per-launch callback): keep it at its
  // least. Our buffers come zeroed; on GPUs with the hardware event system (Blackwell and
  // later) kernel timestamps come from it instead of instrumentation (elsewhere the call
  // answers "not supported" and nothing changes).
  uint8_t zeroed = 1;
  size_t zeroed_size = sizeof(zeroed);
  KC_CUPTI(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size, &zeroed));
  set_attributes(tuning);
  if (CuptiStatus r = KC_CUPTI(cuptiActivityRegisterCallbacks(&on_buffer_requested, &on_buffer_completed)); !r)
    return fail(r, "cuptiActivityRegisterCallbacks");
  // Any refusal (not this GPU, not yet initialised, virtualised...) only keeps the default.
  if (cuptiActivityEnableHWTrace(1) == CUPTI_SUCCESS)
    log::debug("profile: kernel timestamps from the hardware event system");
  // DEVICE first so device names precede the kernels in the file.
  KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE));
  // CONCURRENT_KERNEL: kernels keep running concurrently. KERNEL (serialises them) and none
  // (an empty profile: the floor of our cost) are KERNCAP_PROFILE_CUPTI's diagnostics.
  p.kernel_kind = tuning.kind == format::ProfileCupti::Kind::Kernel ? CUPTI_ACTIVITY_KIND_KERNEL
                                                                     : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  if (tuning.kind == format::ProfileCupti::Kind::Concurrent) {
    if (CuptiStatus r = KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)); !r)
      return fail(r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
  } else if (tuning.kind == format::ProfileCupti::Kind::Kernel) {
    if (CuptiStatus r = KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL)); !r)
      return fail(r, "cuptiActivityEnable(KERNEL)");
  }
  // Context for the trace only: their absence loses nothing the table needs.
  if (tuning.memory) {
    const bool memcpy_on = static_cast<bool>(KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)));
    const bool memset_on = static_cast<bool>(KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET)));
    p.memory_kinds = memcpy_on || memset_on;
  }
  // Benchmark windows (profile_benchmark_begin) are told apart by external correlation
  // records. Enabled, they make CUPTI look up the correlation stack on every API call of the
  // application, so by default they are on only while a window is open.
  p.correlation_always = tuning.correlation_always;
  p.windows = p.correlation_always
                  ? static_cast<bool>(KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)))
                  : true;

  // Sampled timing: without its callbacks nothing would count the launches, so every one is
  // timed instead (the profile stays exact).
  if (launch_callbacks && !sampled) {
    // callback=empty: the same callbacks enabled, handled by ignore_callback; nothing counted
    // (every launch is timed, as without sampling).
    enable_launch_callbacks(p);
  } else if (sampled && !start_sampling(p, config.profile_sample)) {
    log::warn("profile: sampled timing is unavailable (CUPTI refused the launch callbacks); every launch is timed");
    p.sampler = nullptr;
  }

  // Parameter signatures: the launch callbacks (already on with sampled timing).
  if (p.params && !launch_callbacks && !p.sampler) {
    if (enable_launch_callbacks(p)) {
      log::info("profile: parameter signatures of {} kernel pattern(s)", config.profile_params.size());
    } else {
      log::warn("profile: parameter signatures are unavailable (CUPTI refused the launch callbacks)");
      p.params = nullptr;
    }
  }

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
        if (!p->correlation_always) KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
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
      if (!p->correlation_always) KC_CUPTI(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
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
