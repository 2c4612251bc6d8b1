#pragma once
// The capture logic's view of the outside world (libkineto's activity-API seam is the
// model). CUPTI reaches us through one-line C trampolines in injection.cpp that forward
// each callback, as the plain CUpti_CallbackData CUPTI fills, to LaunchWatcher. What the
// watcher then asks of the driver, and the work it orders at the target launch, go through
// the two interfaces below, so that a unit test can fill the callback data, answer the
// queries and record the orders without a GPU (tests/unit/capture_watcher_test.cpp).
#include <cuda.h>
#include <cupti.h>

#include <cstdint>
#include <string>

namespace kerncap::capture {

// Driver queries made for ordinary launches, before kerncap knows which is the target.
// Real implementation: DriverLaunchQueries (launch_info.hpp).
class LaunchQueries {
 public:
  virtual ~LaunchQueries() = default;
  // The mangled name behind a launch handle (a CUfunction, or a CUkernel passed as one),
  // for launches whose callback carries no symbolName. Empty when the driver cannot tell.
  virtual std::string kernel_name(CUfunction f) = 0;
  // Whether `stream` is being captured into a CUDA graph: the launch is then recorded into
  // the graph and does not run now, so it can be neither captured nor counted.
  virtual bool stream_is_capturing(CUstream stream) = 0;
  // The CUDA device ordinal (as this process numbers them) of a launch's context, for
  // `extract --device`; -1 when the driver cannot tell. Asked only when a device was given.
  virtual int device_of(CUcontext /*ctx*/) { return -1; }
  // The module of a launch handle (a CUkernel's in the current context), to bind a code image
  // the driver handed over during that launch (lazy loading); null when the driver cannot tell.
  virtual const void* module_of(CUfunction /*f*/) { return nullptr; }
};

// The launch chosen as the target, at its API entry.
struct TargetLaunch {
  CUpti_CallbackId cbid = 0;
  const CUpti_CallbackData* entry = nullptr;  // the API-entry callback (parameters, context)
  std::string mangled;
  uint64_t launch_index = 0;  // among all launches this process made, from 0
  int target = -1;            // several targets: which one (format::Config::targets); -1: the one
  // Stop the application once this capture is published: no --continue, and no other
  // target is still waiting for its launch.
  bool stop_after = false;
};

// What happens at the target launch: synchronise and take BEFORE at its API entry, let it
// run, synchronise and take AFTER at its API exit, publish the capture. Real
// implementation: Capturer (capturer.hpp). Neither method throws.
class TargetCapture {
 public:
  virtual ~TargetCapture() = default;
  // False: the capture was abandoned and reported, and no AFTER is owed.
  virtual bool begin(const TargetLaunch& target) = 0;
  // The API exit of the launch `begin` accepted (same correlation id, same thread).
  virtual void finish(const CUpti_CallbackData& exit) = 0;
};

}  // namespace kerncap::capture
