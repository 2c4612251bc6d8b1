// A kernel local to its file (an anonymous namespace: nvcc names it _ZN<n>_GLOBAL__N__<hash>_
// <len>_<file>_<id>..., and a recompile of the file another <id>) launched from a CUDA graph, that accumulates each row of a matrix with double atomicAdd into
// shared memory (the sum's rounding depends on warp order) and stores one double per row.
// KC_SKIP_TAIL: the last block stores nothing. For tests/gpu/untyped_e2e.sh.
#include <cstdio>

#include <cuda_runtime.h>

namespace {
__global__ void rowSums(const double* m, double* out, int cols) {
  __shared__ double acc;
  if (threadIdx.x == 0) acc = 0;
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) atomicAdd(&acc, m[blockIdx.x * cols + c] * 1.000001);
  __syncthreads();
#ifdef KC_SKIP_TAIL
  if (blockIdx.x == gridDim.x - 1) return;
#endif
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}
}  // namespace

#ifndef KC_KERNEL_ONLY
int main() {
  const int rows = 512, cols = 4096;
  double *m, *out;
  cudaMalloc(&m, sizeof(double) * rows * cols);
  cudaMalloc(&out, sizeof(double) * rows);
  double* h = new double[size_t(rows) * cols];
  for (int i = 0; i < rows * cols; ++i) h[i] = 1.0 / (3 + i % 1009);
  cudaMemcpy(m, h, sizeof(double) * rows * cols, cudaMemcpyHostToDevice);
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaGraph_t g;
  cudaGraphExec_t e;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  rowSums<<<rows, 256, 0, s>>>(m, out, cols);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&e, g, 0);
  for (int r = 0; r < 3; ++r) cudaGraphLaunch(e, s);
  cudaStreamSynchronize(s);
  cudaMemcpy(h, out, sizeof(double) * rows, cudaMemcpyDeviceToHost);
  std::printf("shared_rows %.17g %s\n", h[0] + h[rows - 1], cudaGetErrorString(cudaGetLastError()));
  return 0;
}
#endif
