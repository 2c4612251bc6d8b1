#pragma once
// Makes a launch's context current for kerncap's own driver calls and restores the
// application thread's previous state afterwards (the runtime does not always leave it
// current). Never throws: it runs inside CUPTI callbacks.
#include <cuda.h>

#include "common/driver.hpp"
#include "common/log.hpp"

namespace kerncap::capture {

class ContextScope {
 public:
  explicit ContextScope(CUcontext ctx) {
    if (ctx && KC_CU_TRY(cuCtxPushCurrent(ctx)) == CUDA_SUCCESS) pushed_ = true;
  }
  ~ContextScope() {
    CUcontext popped = nullptr;
    if (pushed_ && KC_CU_TRY(cuCtxPopCurrent(&popped)) != CUDA_SUCCESS)
      log::warn("could not restore the application thread's CUDA context after kerncap's calls");
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace kerncap::capture
