// A 1-D stencil over three include directories: <mf/common.cuh> (-I include),
// <mf_config.h> (-I config) and "stencil_coeffs.cuh" (next to this file).
#include <mf/api.h>
#include <mf/common.cuh>

#include "stencil_coeffs.cuh"

namespace mf {

__global__ void __launch_bounds__(MF_BLOCK, 2) stencil3(float* out, const float* in, int n, int work) {
  const int i = global_index();
  if (i >= n) return;
  const float c = slow_load(in, i, work);  // kc:slow
  float r = kStencil[MF_RADIUS] * c;
  for (int k = 1; k <= MF_RADIUS; ++k) {
    const int lo = i - k < 0 ? 0 : i - k;
    const int hi = i + k >= n ? n - 1 : i + k;
    r += kStencil[MF_RADIUS - k] * in[lo] + kStencil[MF_RADIUS + k] * in[hi];
  }
  out[i] = r;  // kc:store
}

void run_stencil(float* out, const float* in, int n, int work) {
  stencil3<<<(n + MF_BLOCK - 1) / MF_BLOCK, MF_BLOCK>>>(out, in, n, work);
  check(static_cast<int>(cudaGetLastError()), "stencil3");
}

}  // namespace mf
