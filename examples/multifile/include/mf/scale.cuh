#pragma once
// A templated kernel defined in a header: app/pipeline.cu instantiates <float, 4>,
// app/reduce.cu <double, 2>. The source finder must tell the units apart.
#include <mf/common.cuh>

namespace mf {

template <typename T, int N>
__global__ void __launch_bounds__(MF_BLOCK) scale_kernel(T* out, const T* in, int n, int work) {
  const int i = global_index();
  if (i >= n) return;
  const T v = slow_load(in, i, work);  // kc:slow
  T r = v * static_cast<T>(N) + static_cast<T>(0.5);
  out[i] = r;  // kc:store
}

}  // namespace mf
