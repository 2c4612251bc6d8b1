// Case 10: managed memory (cudaMallocManaged). The host writes between the two launches;
// the suite captures launch 1, whose BEFORE must include the host's writes.
#include <cmath>

#include "common.cuh"

__global__ void refine(float* data, int* flags, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = data[i];
  data[i] = sqrtf(v) + 1.0f;
  if (v > 100.0f) flags[i % 64] = 1;
}

int main() {
  const int n = 1 << 20;
  float* data;
  int* flags;
  CK(cudaMallocManaged(&data, n * sizeof(float)));
  CK(cudaMallocManaged(&flags, 64 * sizeof(int)));
  for (int i = 0; i < n; ++i) data[i] = float(i % 400);
  for (int i = 0; i < 64; ++i) flags[i] = 0;
  refine<<<(n + 255) / 256, 256>>>(data, flags, n);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i += 3) data[i] = data[i] * 150.0f;  // host writes between launches
  refine<<<(n + 255) / 256, 256>>>(data, flags, n);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());
  expect(data[1] == sqrtf(sqrtf(1.0f) + 1.0f) + 1.0f, "data[1] refined twice");
  const uint64_t h = fnv1a(flags, 64 * sizeof(int), fnv1a(data, n * sizeof(float)));
  CK(cudaFree(data));
  CK(cudaFree(flags));
  print_checksum("managed", h);
  return 0;
}
