// An extern "C" kernel (no mangled signature: no element types from its name) that adds
// doubles into one managed 8-byte result with atomicAdd, from every block: the sum's rounding
// depends on the order the blocks run in. KC_SKIP_TAIL: the last block adds nothing (a
// variant that skips a tail). For tests/gpu/untyped_e2e.sh.
#include <cstdio>

#include <cuda_runtime.h>

extern "C" __global__ void kc_atomic_sum(const double* x, double* sum, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef KC_SKIP_TAIL
  if (blockIdx.x == gridDim.x - 1) return;
#endif
  if (i < n) atomicAdd(sum, x[i] * 1.000001);
}

#ifndef KC_KERNEL_ONLY
int main() {
  const int n = 1 << 20;
  double *x, *sum;
  cudaMallocManaged(&x, n * sizeof(double));
  cudaMallocManaged(&sum, sizeof(double));
  for (int i = 0; i < n; ++i) x[i] = 1.0 / (1 + i % 977);
  for (int r = 0; r < 3; ++r) {
    *sum = 0;
    kc_atomic_sum<<<(n + 255) / 256, 256>>>(x, sum, n);
    cudaDeviceSynchronize();
  }
  std::printf("atomic_sum %.17g %s\n", *sum, cudaGetErrorString(cudaGetLastError()));
  return 0;
}
#endif
