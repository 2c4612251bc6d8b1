// Case 5: module globals. The kernel reads __constant__ coefficients and a __device__
// bias the host set with cudaMemcpyToSymbol, and writes a __device__ counter and a
// __device__ histogram that the host reads back. Launched 3 times with different constants
// between launches; the suite captures launch 1, whose BEFORE holds the second constant set,
// the counter at 1 and the histogram of launch 0.
#include <vector>

#include "common.cuh"

__constant__ float c_poly[4];
__device__ float d_bias;
__device__ unsigned int d_calls;
__device__ int d_hist[32];

__global__ void polyEval(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float r = ((c_poly[3] * v + c_poly[2]) * v + c_poly[1]) * v + c_poly[0] + d_bias;
  y[i] = r;
  int bin = min(31, max(0, int(r)));
  atomicAdd(&d_hist[bin], 1);
  if (i == 0) atomicAdd(&d_calls, 1u);
}

int main() {
  const int n = 1 << 18;
  const size_t bytes = n * sizeof(float);
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float(i % 640) / 160.0f;  // [0, 4)
  float *dx, *dy;
  CK(cudaMalloc(&dx, bytes));
  CK(cudaMalloc(&dy, bytes));
  CK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  const float polys[3][4] = {{1, 2, 0, 0.25f}, {0.5f, -1, 1, 0.125f}, {3, 0.5f, 0.5f, 0}};
  const float biases[3] = {0, 2, -1};
  for (int k = 0; k < 3; ++k) {
    CK(cudaMemcpyToSymbol(c_poly, polys[k], sizeof polys[k]));
    CK(cudaMemcpyToSymbol(d_bias, &biases[k], sizeof(float)));
    polyEval<<<(n + 255) / 256, 256>>>(dx, dy, n);
    CK_LAUNCH();
  }
  CK(cudaDeviceSynchronize());
  unsigned int calls = 0;
  int hist[32];
  CK(cudaMemcpyFromSymbol(&calls, d_calls, sizeof calls));
  CK(cudaMemcpyFromSymbol(hist, d_hist, sizeof hist));
  CK(cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost));
  long total = 0;
  for (int b : hist) total += b;
  expect(calls == 3, "d_calls == 3");
  expect(total == 3L * n, "histogram counts every element of every launch");
  CK(cudaFree(dx));
  CK(cudaFree(dy));
  std::printf("calls %u hist[0] %d hist[1] %d\n", calls, hist[0], hist[1]);
  print_checksum("globals", fnv1a(hist, sizeof hist, fnv1a(y.data(), bytes)));
  return 0;
}
