#pragma once
// Capture mode's CUPTI kernel records, for the in-app time of the captured kernel
// (in_app.hpp). Started with capture mode; flushed at the capture, after the target launch
// completed. A failure only loses the in-app time (logged), never the capture.
namespace kerncap::capture {

// Registers the activity buffers and enables CONCURRENT_KERNEL records.
void start_in_app_records();
// Delivers every completed record to in_app_times() (call after the target completed).
void flush_in_app_records();

}  // namespace kerncap::capture
