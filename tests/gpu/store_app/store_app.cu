// The chunk store suite's application (tests/gpu/store_e2e.sh): 64 MiB of model-weight-like
// bf16 values, of which the kernel reads only the first 512 KiB, and two launches of one
// kernel that share the weights (dispatch 0 and 1), so two captures in one store keep the
// weights once and `kerncap prune` drops the 63.5 MiB the launch never touches.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e = (x);                                                            \
    if (e != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      return 1;                                                                     \
    }                                                                               \
  } while (0)

__device__ float bf16(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }

// Weights like a trained layer's: small values around 0 (a hash stands in for the noise).
__global__ void store_fill_weights(uint16_t* w, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 15;
    const float v = (static_cast<float>(h % 4001) - 2000.f) * 1e-5f;
    w[i] = static_cast<uint16_t>(__float_as_uint(v) >> 16);
  }
}

__global__ void store_fill_input(float* x, int n, float scale) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = scale * static_cast<float>(i % 97);
}

__global__ void store_axpy(const uint16_t* w, const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += bf16(w[i]) * x[i];
}

int main() {
  const size_t weights = size_t{32} << 20;  // bf16 values: 64 MiB
  const int n = 256 << 10;                  // the kernel reads the first n of them (512 KiB)
  uint16_t* w = nullptr;
  float *x1 = nullptr, *x2 = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&w, weights * 2));
  CHECK(cudaMalloc(&x1, n * 4));
  CHECK(cudaMalloc(&x2, n * 4));
  CHECK(cudaMalloc(&y, n * 4));
  store_fill_weights<<<1024, 256>>>(w, weights);
  store_fill_input<<<(n + 255) / 256, 256>>>(x1, n, 1.f);
  store_fill_input<<<(n + 255) / 256, 256>>>(x2, n, -0.5f);
  CHECK(cudaMemset(y, 0, n * 4));
  store_axpy<<<(n + 255) / 256, 256>>>(w, x1, y, n);
  store_axpy<<<(n + 255) / 256, 256>>>(w, x2, y, n);
  float host[4] = {};
  CHECK(cudaMemcpy(host, y + 1, sizeof(host), cudaMemcpyDeviceToHost));
  std::printf("y[1..4] = %g %g %g %g\n", host[0], host[1], host[2], host[3]);
  return 0;
}
