// Instantiates the header's templated kernel for double, plus a kernel in an anonymous
// namespace and a static one (internal linkage: nvcc tags their names with this file).
#include <mf/api.h>
#include <mf/scale.cuh>

namespace {

__global__ void partial_sums(double* sums, const double* in, int n) {
  __shared__ double s[MF_BLOCK];
  const int i = mf::global_index();
  s[threadIdx.x] = i < n ? in[i] : 0.0;
  __syncthreads();
  for (int w = MF_BLOCK / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = s[0];
}

}  // namespace

static __global__ void zero_fill(double* p, int n) {
  const int i = mf::global_index();
  if (i < n) p[i] = 0.0;
}

namespace mf {

void run_scale_f64(double* out, const double* in, int n, int work) {
  scale_kernel<double, 2><<<(n + MF_BLOCK - 1) / MF_BLOCK, MF_BLOCK>>>(out, in, n, work);
  check(static_cast<int>(cudaGetLastError()), "scale_kernel<double, 2>");
}

void run_partial_sums(double* sums, const double* in, int n) {
  const int blocks = (n + MF_BLOCK - 1) / MF_BLOCK;
  zero_fill<<<(blocks + MF_BLOCK - 1) / MF_BLOCK, MF_BLOCK>>>(sums, blocks);
  partial_sums<<<blocks, MF_BLOCK>>>(sums, in, n);
  check(static_cast<int>(cudaGetLastError()), "partial_sums");
}

}  // namespace mf
