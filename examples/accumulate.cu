// Case 2: in-place accumulate c += a * b, launched 8 times. The suite captures launch 4
// (--dispatch 4): its BEFORE must hold c after four launches, not after five, or the
// replay's output differs from the application's AFTER and validate fails.
// Values are small integers, so every sum is exact in float.
#include <vector>

#include "common.cuh"

__global__ void accumulate(float* c, const float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] += a[i] * b[i];
}

int main() {
  const int n = 1 << 20, launches = 8;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = float(i % 13);
    b[i] = 0.5f * (i % 7);
    c[i] = float(i % 5);
  }
  const size_t bytes = n * sizeof(float);
  float *da, *db, *dc;
  CK(cudaMalloc(&da, bytes));
  CK(cudaMalloc(&db, bytes));
  CK(cudaMalloc(&dc, bytes));
  CK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dc, c.data(), bytes, cudaMemcpyHostToDevice));
  for (int k = 0; k < launches; ++k) {
    accumulate<<<(n + 255) / 256, 256>>>(dc, da, db, n);
    CK_LAUNCH();
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> out(n);
  CK(cudaMemcpy(out.data(), dc, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) expect(out[i] == c[i] + launches * a[i] * b[i], "c == c0 + 8ab");
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dc));
  print_checksum("accumulate", fnv1a(out.data(), bytes));
  return 0;
}
