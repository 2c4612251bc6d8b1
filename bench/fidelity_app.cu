// Kernels for bench/replay_fidelity.sh, each launched the way an application's loop launches
// it: the same kernel, the same shape, many times back to back. The in-app time recorded at
// capture (the manifest's in_app_*) then has samples besides the cold first launch, and the
// replay of, say, launch 10 is compared with launches 1..10. Several are 3–10 µs on an H100,
// where launch overhead and cold caches distort a timer most.
//
//   fidelity_app MODE [--repeat R]     (R launches, default 20; prints "MODE ok <checksum>")
//   MODE: tiny saxpy saxpy_big stencil transpose histogram rowsum matmul; memory: zero_copy
//   host_registered pool_big pool_churn
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// One block, a few instructions: the shortest kernel there is (launch latency).
__global__ void tiny(float* x) {
  if (threadIdx.x == 0) x[0] += 1.0f;
}

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void vadd(int n, const float* a, const float* b, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// 5-point stencil on an n x n grid (interior only).
__global__ void stencil5(int n, const float* in, float* out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
  int i = y * n + x;
  out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - n] + in[i + n]);
}

// Tiled transpose through shared memory (32x32 tiles, 32x8 threads).
__global__ void transpose(int n, const float* in, float* out) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}

// 256-bin histogram: shared-memory atomics, then one global atomic per bin and block.
__global__ void histogram(int n, const unsigned char* in, unsigned* bins) {
  __shared__ unsigned local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

// One warp per row.
__global__ void rowsum(int rows, int cols, const float* in, float* out) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0;
  for (int c = lane; c < cols; c += 32) s += in[row * cols + c];
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) out[row] = s;
}

// Tiled SGEMM, 16x16 tiles: C = A * B, n x n.
__global__ void matmul(int n, const float* a, const float* b, float* c) {
  __shared__ float ta[16][16], tb[16][16];
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float s = 0;
  for (int k = 0; k < n; k += 16) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k + threadIdx.y) * n + col];
    __syncthreads();
    for (int j = 0; j < 16; ++j) s += ta[threadIdx.y][j] * tb[j][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = s;
}

float* device_floats(size_t n, unsigned seed) {
  std::vector<float> h(n);
  for (auto& v : h) v = float((seed = seed * 1664525u + 1013904223u) >> 9) / float(1 << 23) - 0.5f;
  float* d = nullptr;
  CK(cudaMalloc(&d, n * sizeof(float)));
  CK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

double checksum(const void* d, size_t bytes) {
  std::vector<float> h(bytes / sizeof(float));
  CK(cudaMemcpy(h.data(), d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double s = 0;
  for (size_t i = 0; i < h.size(); i += 97) s += h[i];
  return s;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fidelity_app MODE [--repeat R]\n");
    return 2;
  }
  const std::string mode = argv[1];
  int repeat = 20;
  for (int i = 2; i < argc; ++i)
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
  const void* result = nullptr;
  size_t result_bytes = 0;
  if (mode == "tiny") {
    float* x = device_floats(1, 1);
    for (int r = 0; r < repeat; ++r) tiny<<<1, 32>>>(x);
    result = x, result_bytes = sizeof(float);
  } else if (mode == "saxpy" || mode == "saxpy_big") {
    const int n = mode == "saxpy" ? 1 << 20 : 1 << 26;
    float *x = device_floats(n, 2), *y = device_floats(n, 3);
    for (int r = 0; r < repeat; ++r) saxpy<<<(n + 255) / 256, 256>>>(n, 0.5f, x, y);
    result = y, result_bytes = size_t(n) * sizeof(float);
  } else if (mode == "stencil") {
    const int n = 1024;
    float *a = device_floats(size_t(n) * n, 4), *b = device_floats(size_t(n) * n, 5);
    for (int r = 0; r < repeat; ++r) stencil5<<<dim3(n / 32, n / 8), dim3(32, 8)>>>(n, a, b);
    result = b, result_bytes = size_t(n) * n * sizeof(float);
  } else if (mode == "transpose") {
    const int n = 4096;
    float *a = device_floats(size_t(n) * n, 6), *b = device_floats(size_t(n) * n, 7);
    for (int r = 0; r < repeat; ++r) transpose<<<dim3(n / 32, n / 32), dim3(32, 8)>>>(n, a, b);
    result = b, result_bytes = size_t(n) * n * sizeof(float);
  } else if (mode == "histogram") {
    const int n = 1 << 24;
    auto* in = reinterpret_cast<unsigned char*>(device_floats(n / 4, 8));
    unsigned* bins = nullptr;
    CK(cudaMalloc(&bins, 256 * sizeof(unsigned)));
    CK(cudaMemset(bins, 0, 256 * sizeof(unsigned)));
    for (int r = 0; r < repeat; ++r) histogram<<<264, 512>>>(n, in, bins);
    result = bins, result_bytes = 256 * sizeof(unsigned);
  } else if (mode == "rowsum") {
    const int rows = 8192, cols = 512;
    float *in = device_floats(size_t(rows) * cols, 9), *out = device_floats(rows, 10);
    for (int r = 0; r < repeat; ++r) rowsum<<<rows / 8, 256>>>(rows, cols, in, out);
    result = out, result_bytes = rows * sizeof(float);
  } else if (mode == "matmul") {
    const int n = 512;
    float *a = device_floats(size_t(n) * n, 11), *b = device_floats(size_t(n) * n, 12), *c = device_floats(size_t(n) * n, 13);
    for (int r = 0; r < repeat; ++r) matmul<<<dim3(n / 16, n / 16), dim3(16, 16)>>>(n, a, b, c);
    result = c, result_bytes = size_t(n) * n * sizeof(float);
  } else if (mode == "zero_copy" || mode == "host_registered") {
    // saxpy whose x and y are host memory the device reads over the bus: pinned and mapped
    // (cudaHostAlloc) or pageable memory pinned afterwards (cudaHostRegister).
    const int n = 1 << 20;
    const size_t bytes = size_t(n) * sizeof(float);
    float* h[2] = {};
    for (int k = 0; k < 2; ++k) {
      if (mode == "zero_copy") {
        CK(cudaHostAlloc(&h[k], bytes, cudaHostAllocMapped));
      } else {
        h[k] = static_cast<float*>(std::aligned_alloc(4096, bytes));
        CK(cudaHostRegister(h[k], bytes, cudaHostRegisterMapped));
      }
      for (int i = 0; i < n; ++i) h[k][i] = float((i * 7 + k) % 101) / 101.0f;
    }
    float *x = nullptr, *y = nullptr;
    CK(cudaHostGetDevicePointer(&x, h[0], 0));
    CK(cudaHostGetDevicePointer(&y, h[1], 0));
    for (int r = 0; r < repeat; ++r) saxpy<<<(n + 255) / 256, 256>>>(n, 0.5f, x, y);
    result = y, result_bytes = bytes;
  } else if (mode == "pool_big") {
    // saxpy over 128 MiB buffers from the stream-ordered pool (cudaMallocAsync).
    const int n = 1 << 25;
    const size_t bytes = size_t(n) * sizeof(float);
    float *x = nullptr, *y = nullptr;
    CK(cudaMallocAsync(&x, bytes, 0));
    CK(cudaMallocAsync(&y, bytes, 0));
    CK(cudaMemsetAsync(x, 0, bytes, 0));
    CK(cudaMemsetAsync(y, 0, bytes, 0));
    for (int r = 0; r < repeat; ++r) saxpy<<<(n + 255) / 256, 256>>>(n, 0.5f, x, y);
    result = y, result_bytes = bytes;
  } else if (mode == "pool_churn") {
    // c = a + b over 128 MiB, c taken from the stream-ordered pool and given back every
    // iteration (cudaMallocAsync / cudaFreeAsync), between writes of a 512 MiB buffer.
    const int n = 1 << 25;
    const size_t bytes = size_t(n) * sizeof(float);
    float *a = device_floats(n, 14), *b = device_floats(n, 15), *c = nullptr, *big = nullptr;
    CK(cudaMalloc(&big, 4 * bytes));
    for (int r = 0; r < repeat; ++r) {
      CK(cudaMallocAsync(&c, bytes, 0));
      vadd<<<(n + 255) / 256, 256>>>(n, a, b, c);
      if (r + 1 < repeat) {
        CK(cudaMemsetAsync(big, r, 4 * bytes, 0));
        CK(cudaFreeAsync(c, 0));
      }
    }
    result = c, result_bytes = bytes;
  } else {
    std::fprintf(stderr, "fidelity_app: unknown mode %s\n", mode.c_str());
    return 2;
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::printf("%s ok %.6g\n", mode.c_str(), checksum(result, result_bytes));
  return 0;
}
