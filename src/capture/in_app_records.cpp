#include "capture/in_app_records.hpp"

#include <cupti.h>

#include <atomic>
#include <cstdlib>

#include "capture/cupti_check.hpp"
#include "capture/in_app.hpp"

namespace kerncap::capture {
namespace {

constexpr size_t kBufferBytes = 1u << 20;
std::atomic<bool> g_registered{false};
std::atomic<bool> g_enabled{false};
std::atomic<KernelRecordHook> g_record_hook{nullptr};

void CUPTIAPI in_app_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // no memory: CUPTI drops records (the in-app time gets fewer)
  *max_records = 0;
}

void CUPTIAPI in_app_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  try {  // nothing may unwind into CUPTI
    CUpti_Activity* rec = nullptr;
    // The end of the buffer is CUPTI_ERROR_MAX_LIMIT_REACHED: an answer, not logged.
    while (buffer && KC_CUPTI(cuptiActivityGetNextRecord(buffer, valid, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED)) {
      if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(*rec);
      add_kernel_record(in_app_times(), k);
      if (auto hook = g_record_hook.load(std::memory_order_acquire)) hook(k.correlationId, k.name, k.start, k.end);
    }
  } catch (...) {
    // Out of memory: this buffer's records are lost, the application is not.
  }
  std::free(buffer);
}

}  // namespace

void set_kernel_record_hook(KernelRecordHook hook) {
  g_record_hook.store(hook, std::memory_order_release);
}

void start_in_app_records(bool now) {
  if (!KC_CUPTI(cuptiActivityRegisterCallbacks(&in_app_buffer_requested, &in_app_buffer_completed))) return;
  g_registered = true;
  if (now) enable_in_app_records();
}

void enable_in_app_records() {
  if (!g_registered.load(std::memory_order_relaxed) || g_enabled.load(std::memory_order_relaxed)) return;
  if (g_enabled.exchange(true)) return;  // another thread got here first
  if (!KC_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))) g_registered = false;
}

void flush_in_app_records() {
  if (!g_registered || !g_enabled) return;
  // Complete buffers first; then the rest (a record whose timestamps are not filled in yet
  // arrives with end 0 and does not count).
  KC_CUPTI(cuptiActivityFlushAll(0));
  KC_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
}

}  // namespace kerncap::capture
