#pragma once
// Profile mode's record handling: CUPTI activity records (kernels, copies, sets, devices)
// turned into the profile record file. CUPTI hands over whole buffers on its own thread
// (profiler.cpp's trampolines); walking a buffer and asking for the dropped count are the
// only CUPTI calls involved, and they go through ActivityBuffer so that a unit test can
// feed fake records without a GPU (tests/unit/capture_activity_test.cpp).
#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "format/profile_records.hpp"

namespace kerncap::capture {

// The CUPTI calls made while draining one completed buffer. Real implementation:
// CuptiActivityBuffer in profiler.cpp (cuptiActivityGetNextRecord and friends).
class ActivityBuffer {
 public:
  virtual ~ActivityBuffer() = default;
  // Advances `*record` (nullptr: before the first) to the next record; false at the end.
  virtual bool next(CUpti_Activity** record) = 0;
  // Records CUPTI had to drop (its buffers were full) since the last call.
  virtual size_t dropped() = 0;
};

// The external-correlation kind profile mode pushes for the Triton shim's benchmark windows
// (kerncap_ignore_begin/end): CUPTI then links every API call made inside one to it.
inline constexpr CUpti_ExternalCorrelationKind kBenchmarkCorrelationKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

class ActivityRecorder {
 public:
  explicit ActivityRecorder(format::RecordWriter& writer) : writer_(writer) {}
  // One record; kinds other than kernels, memcpy, memset, devices and benchmark-window
  // correlations are ignored.
  void record(const CUpti_Activity& rec);
  // Every record of one buffer, then the dropped count. Never throws: on failure (out of
  // memory while formatting) the rest of the buffer is lost, never the application.
  void drain(ActivityBuffer& buffer) noexcept;

 private:
  format::RecordWriter& writer_;
};

// "HtoD", "DtoH", ... for CUpti_ActivityMemcpyKind.
const char* copy_kind_name(uint8_t kind);

}  // namespace kerncap::capture
