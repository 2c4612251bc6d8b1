// Instantiates the header's templated kernel for float.
#include <mf/api.h>
#include <mf/scale.cuh>

namespace mf {

void run_scale_f32(float* out, const float* in, int n, int work) {
  scale_kernel<float, 4><<<(n + MF_BLOCK - 1) / MF_BLOCK, MF_BLOCK>>>(out, in, n, work);
  check(static_cast<int>(cudaGetLastError()), "scale_kernel<float, 4>");
}

}  // namespace mf
