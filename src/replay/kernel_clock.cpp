#include "replay/kernel_clock.hpp"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace kerncap::replay {
namespace {

#define KERNCAP_CUPTI_FUNCS(X)                                                                      \
  X(cuptiActivityEnable) X(cuptiActivityDisable) X(cuptiActivityRegisterCallbacks)                 \
  X(cuptiActivityFlushAll) X(cuptiActivityGetNextRecord) X(cuptiGetResultString) X(cuptiGetTimestamp)

struct Cupti {
#define KERNCAP_CUPTI_MEMBER(name) decltype(&::name) name = nullptr;
  KERNCAP_CUPTI_FUNCS(KERNCAP_CUPTI_MEMBER)
#undef KERNCAP_CUPTI_MEMBER
  std::string error;  // why it did not load
};

// libcupti of the toolkit we were built with: beside this library (the build's lib/ and an
// install's lib/ hold a copy), in ../lib of the executable, then wherever the loader looks.
Cupti load_cupti() {
  namespace fs = std::filesystem;
  const std::string name = fmt::format("libcupti.so.{}", CUDA_VERSION / 1000);
  std::vector<std::string> tries;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&sum_kernels), &info) && info.dli_fname && *info.dli_fname) {
    const fs::path here = fs::path(info.dli_fname).parent_path();
    tries.push_back((here / name).string());
    tries.push_back((here / ".." / "lib" / name).string());
  }
  std::error_code ec;
  if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec)
    tries.push_back((exe.parent_path() / ".." / "lib" / name).string());
  tries.push_back(name);
  tries.push_back("libcupti.so");
  Cupti c;
  void* lib = nullptr;
  for (const auto& t : tries)
    if ((lib = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) {
    c.error = fmt::format("{} not found beside kerncap or on the library path", name);
    return c;
  }
#define KERNCAP_CUPTI_RESOLVE(fn)                                   \
  c.fn = reinterpret_cast<decltype(c.fn)>(dlsym(lib, #fn));         \
  if (!c.fn && c.error.empty()) c.error = fmt::format("{} lacks {}", name, #fn);
  KERNCAP_CUPTI_FUNCS(KERNCAP_CUPTI_RESOLVE)
#undef KERNCAP_CUPTI_RESOLVE
  return c;
}

const Cupti& cupti() {
  static const Cupti c = load_cupti();
  return c;
}

// A CUPTI call's outcome: the result and, on failure, "call failed: CUPTI_ERROR_X (file:line)".
struct CuptiCall {
  CUptiResult result = CUPTI_SUCCESS;
  std::string error;
  explicit operator bool() const { return result == CUPTI_SUCCESS; }
};

CuptiCall cupti_checked(CUptiResult r, const char* call, const char* file, int line) {
  if (r == CUPTI_SUCCESS) return {};
  const char* text = nullptr;
  if (!cupti().cuptiGetResultString || cupti().cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text)
    text = "unknown CUPTI error";
  return {r, fmt::format("{} failed: {} (at {}:{})", call, text, std::filesystem::path(file).filename().string(), line)};
}

}  // namespace

// The one checking macro for CUPTI calls in the replay engine: the call goes through the
// loaded table; a failure comes back with the call's text, never thrown or logged (timing
// falls back to events and says why).
#define KC_CUPTI_CALL(fn, args) cupti_checked(cupti().fn args, #fn #args, __FILE__, __LINE__)

namespace {

// Records arrive on CUPTI's thread or in the flushing one: collected under a lock.
std::mutex g_mu;
std::vector<KernelSpan> g_spans;
std::atomic<bool> g_active{false};
std::atomic<bool> g_keep{false};     // KernelClock::keep_enabled
bool g_enabled = false;              // the records are enabled now (under g_active)
constexpr size_t kBufferBytes = 4u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  try {  // nothing may unwind into CUPTI
    std::vector<KernelSpan> got;
    CUpti_Activity* rec = nullptr;
    // Ends with CUPTI_ERROR_MAX_LIMIT_REACHED: the buffer's last record was read.
    while (buffer && KC_CUPTI_CALL(cuptiActivityGetNextRecord, (buffer, valid, &rec))) {
      if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(*rec);
      got.push_back({k.start, k.end, is_our_kernel(k.name)});
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_spans.insert(g_spans.end(), got.begin(), got.end());
  } catch (...) {
    // Out of memory: this buffer's kernels are lost; take() then reports too few of them.
  }
  std::free(buffer);
}

}  // namespace

bool is_our_kernel(const char* name) { return name && std::strncmp(name, "kerncap_", 8) == 0; }

KernelSum sum_kernels(const std::vector<KernelSpan>& spans, uint64_t since_ns) {
  KernelSum s;
  for (const auto& k : spans) {
    if (k.ours || k.start_ns < since_ns || k.end_ns <= k.start_ns) continue;
    s.ns += k.end_ns - k.start_ns;
    ++s.kernels;
  }
  return s;
}

KernelClock::KernelClock() {
  const Cupti& c = cupti();
  if (!c.error.empty()) {
    why_ = c.error;
    return;
  }
  if (g_active.exchange(true)) {
    why_ = "CUPTI kernel records are already in use by another timing in this process";
    return;
  }
  static const CuptiCall registered =
      KC_CUPTI_CALL(cuptiActivityRegisterCallbacks, (buffer_requested, buffer_completed));
  CuptiCall r = registered;
  if (r && !g_enabled) r = KC_CUPTI_CALL(cuptiActivityEnable, (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  if (!r) {
    why_ = r.error;
    g_active = false;
    return;
  }
  g_enabled = true;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_spans.clear();
  }
  ok_ = true;
}

void KernelClock::keep_enabled(bool keep) { g_keep = keep; }

KernelClock::~KernelClock() {
  if (!ok_) return;
  if (!g_keep) {
    (void)KC_CUPTI_CALL(cuptiActivityFlushAll, (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    (void)KC_CUPTI_CALL(cuptiActivityDisable, (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    g_enabled = false;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_spans.clear();
  g_active = false;
}

uint64_t KernelClock::now() const {
  uint64_t t = 0;
  if (ok_ && !KC_CUPTI_CALL(cuptiGetTimestamp, (&t))) t = 0;
  return t;
}

std::vector<KernelSum> split_launches(const std::vector<KernelSpan>& spans, uint64_t since_ns, size_t per_launch,
                                      size_t launches) {
  std::vector<KernelSpan> mine;
  for (const auto& k : spans)
    if (!k.ours && k.start_ns >= since_ns && k.end_ns > k.start_ns) mine.push_back(k);
  if (per_launch == 0 || mine.size() != per_launch * launches) return {};
  std::stable_sort(mine.begin(), mine.end(), [](const KernelSpan& a, const KernelSpan& b) { return a.start_ns < b.start_ns; });
  std::vector<KernelSum> out(launches);
  for (size_t i = 0; i < mine.size(); ++i) {
    out[i / per_launch].ns += mine[i].end_ns - mine[i].start_ns;
    ++out[i / per_launch].kernels;
  }
  return out;
}

std::vector<KernelSpan> KernelClock::collect(uint64_t since_ns, size_t expect) {
  if (!ok_) return {};
  // A plain flush delivers only buffers whose records are complete (timestamps filled in,
  // which can come a little after the stream is idle); a forced one, the last resort, also
  // delivers incomplete records, which are then lost (sum_kernels skips them). The waits
  // between flushes grow from 10 µs to 1 ms: most records are complete at the first or second
  // flush, and a fixed 1 ms wait cost every timed launch a millisecond.
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto wait = std::chrono::microseconds(10);
  for (;;) {
    const auto spent = Clock::now() - t0;
    if (spent >= std::chrono::milliseconds(50)) break;
    const bool forced = spent >= std::chrono::milliseconds(40);
    (void)KC_CUPTI_CALL(cuptiActivityFlushAll, (forced ? uint32_t{CUPTI_ACTIVITY_FLAG_FLUSH_FORCED} : 0u));
    ++flushes_;
    size_t got = 0;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      got = sum_kernels(g_spans, since_ns).kernels;
    }
    if (got >= expect) break;
    std::this_thread::sleep_for(wait);
    wait = std::min<std::chrono::microseconds>(wait * 2, std::chrono::milliseconds(1));
  }
  take_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<KernelSpan> spans;
  spans.swap(g_spans);
  return spans;
}

KernelSum KernelClock::take(uint64_t since_ns, size_t expect) {
  return sum_kernels(collect(since_ns, expect), since_ns);
}

std::vector<KernelSum> KernelClock::take_launches(uint64_t since_ns, size_t per_launch, size_t launches) {
  return split_launches(collect(since_ns, per_launch * launches), since_ns, per_launch, launches);
}

}  // namespace kerncap::replay
