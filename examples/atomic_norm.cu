// A nondeterministic kernel: every thread adds the square of its element into partial sums
// with float atomicAdd, so the rounding of each sum depends on the order in which blocks
// reach it — two runs of the same launch differ in their last bits. Launched 4 times (the
// suite captures a later dispatch); the host checks the sums within fp32 tolerance.
#include <cmath>
#include <vector>

#include "common.cuh"

__global__ void sumSquares(float* sums, const float* x, int n, int buckets) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&sums[i % buckets], x[i] * x[i]);
}

int main() {
  const int n = 1 << 22, buckets = 64, launches = 4;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.001f * float((i % 1000) * 7 % 1000) + 1e-4f * float(i % 17);
  float *dx, *dsums;
  CK(cudaMalloc(&dx, n * sizeof(float)));
  CK(cudaMalloc(&dsums, buckets * sizeof(float)));
  CK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  std::vector<float> sums(buckets);
  for (int k = 0; k < launches; ++k) {
    CK(cudaMemset(dsums, 0, buckets * sizeof(float)));
    sumSquares<<<(n + 255) / 256, 256>>>(dsums, dx, n, buckets);
    CK_LAUNCH();
    CK(cudaMemcpy(sums.data(), dsums, buckets * sizeof(float), cudaMemcpyDeviceToHost));
  }
  std::vector<double> ref(buckets, 0.0);
  for (int i = 0; i < n; ++i) ref[i % buckets] += double(x[i]) * double(x[i]);
  for (int b = 0; b < buckets; ++b) expect(std::fabs(sums[b] - ref[b]) <= 1e-3 * ref[b], "sum within 1e-3");
  CK(cudaFree(dx));
  CK(cudaFree(dsums));
  std::printf("atomic_norm: %d buckets, sum[0] = %.3f\n", buckets, ref[0]);
  return 0;
}
