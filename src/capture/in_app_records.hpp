#pragma once
// Capture mode's CUPTI kernel records, for the in-app time of the captured kernel
// (in_app.hpp). Kernel records cost the application a little on every launch (CUPTI stamps
// each kernel's start and end), so by default they are switched on only at the first counted
// match, or kInAppLead matches before a far dispatch (Config::in_app_time, in_app.hpp): the
// launches before need no record. Flushed at the capture, after the target launch
// completed. A failure only loses the in-app time (logged), never the capture.
#include <cstdint>

namespace kerncap::capture {

// Registers the activity buffers; with `now`, enables CONCURRENT_KERNEL records at once.
void start_in_app_records(bool now);
// Enables the records if start_in_app_records registered the buffers and they are not on
// yet. Cheap after the first call (one atomic load); safe from a launch callback.
void enable_in_app_records();
// Delivers every completed record to in_app_times() (call after the target completed).
void flush_in_app_records();
// Also hands every kernel record's correlation id, name, start and end (ns) to `hook` (a
// window of launches, window_recorder.hpp); null: none. Set before the records start.
using KernelRecordHook = void (*)(uint32_t correlation, const char* name, uint64_t start_ns, uint64_t end_ns);
void set_kernel_record_hook(KernelRecordHook hook);

}  // namespace kerncap::capture
