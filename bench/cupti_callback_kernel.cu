// The launch loop of bench/cupti_callback_cost: tiny kernels through the runtime, as an
// application launches them (the runtime's launch reaches the driver's cuLaunchKernel*, whose
// CUPTI callbacks are what is measured).
#include <cuda_runtime.h>

#include <cstdio>

__global__ void cost_tiny_kernel(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

// Launches `n` tiny kernels and synchronises; false (after a message) on a CUDA error.
extern "C" bool cost_launch_loop(int* counter, long n) {
  for (long i = 0; i < n; ++i) cost_tiny_kernel<<<1, 32>>>(counter);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) std::fprintf(stderr, "launch loop: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess;
}

extern "C" int* cost_counter() {
  int* p = nullptr;
  if (cudaMalloc(&p, sizeof(int)) != cudaSuccess) return nullptr;
  return p;
}
