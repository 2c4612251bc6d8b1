// The device of a launch's context, for `extract --device N`: asked once per context (a
// context belongs to one device for its whole life), with the context made current only
// for the question.
#include "capture/launch_info.hpp"
#include "common/driver.hpp"

namespace kerncap::capture {

int DriverLaunchQueries::device_of(CUcontext ctx) {
  if (!ctx) return -1;
  std::lock_guard lk(device_mu_);
  if (auto it = devices_.find(ctx); it != devices_.end()) return it->second;
  int ordinal = -1;
  if (KC_CU_TRY(cuCtxPushCurrent(ctx)) == CUDA_SUCCESS) {
    CUdevice dev = 0;
    if (KC_CU_TRY(cuCtxGetDevice(&dev)) == CUDA_SUCCESS) ordinal = static_cast<int>(dev);
    CUcontext popped = nullptr;
    KC_CU_TRY(cuCtxPopCurrent(&popped));
  }
  if (ordinal >= 0) devices_.emplace(ctx, ordinal);
  return ordinal;
}

}  // namespace kerncap::capture
