#pragma once
// Device helpers shared by the multifile kernels (-I include).
#include <mf_config.h>

namespace mf {

__device__ inline int global_index() { return static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); }

// Deliberately wasteful: reads p[i] `work` times through a volatile pointer (the compiler
// must keep every load) and returns the last value, which is p[i]. The kernels call it on
// a line marked "kc:slow" so that a test can replace it with p[i]: same result, faster.
template <typename T>
__device__ inline T slow_load(const T* p, int i, int work) {
  const volatile T* vp = p;
  T v = vp[i];
  for (int k = 1; k < work; ++k) v = vp[i];
  return v;
}

}  // namespace mf
