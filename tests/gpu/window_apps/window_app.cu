// A small "layer" for tests/gpu/window_e2e.sh: on one stream, ITER times:
//   rms_norm(y <- x, w)  ->  copy xs <- x (device to device)  ->  memset z = 0
//   -> gemm(z += y * W)  ->  silu(a <- z)  ->  residual_add(x += a)
// Every buffer has its own size (BUF_PAD floats apart) so that the suite can tell the
// capture's regions apart by size alone. gemm accumulates into z, so a replay that skipped
// the memset would differ; x changes every iteration, so the window's BEFORE matters.
//
//   window_app [ITER=4] [ROWS=512] [D=512]
// Variants for the suite, built from this file with -DVARIANT=...:
//   gemm_unrolled  gemm with 4 partial sums (another summation order: equal within fp32 tolerance)
//   gemm_skip_row  gemm that leaves the last row of z alone (a wrong kernel)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

extern "C" __global__ void rms_norm(float* y, const float* x, const float* w, int rows, int d) {
  const int r = blockIdx.x;
  if (r >= rows) return;
  __shared__ float part[256];
  float s = 0;
  for (int i = threadIdx.x; i < d; i += blockDim.x) s += x[r * d + i] * x[r * d + i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  const float inv = rsqrtf(part[0] / d + 1e-6f);
  for (int i = threadIdx.x; i < d; i += blockDim.x) y[r * d + i] = x[r * d + i] * inv * w[i];
}

extern "C" __global__ void gemm(float* z, const float* y, const float* W, int rows, int d) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (c >= d || r >= rows) return;
#if defined(VARIANT_gemm_skip_row)
  if (r == rows - 1) return;
#endif
#if defined(VARIANT_gemm_unrolled)
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int k = 0;
  for (; k + 3 < d; k += 4) {
    s0 += y[r * d + k] * W[k * d + c];
    s1 += y[r * d + k + 1] * W[(k + 1) * d + c];
    s2 += y[r * d + k + 2] * W[(k + 2) * d + c];
    s3 += y[r * d + k + 3] * W[(k + 3) * d + c];
  }
  for (; k < d; ++k) s0 += y[r * d + k] * W[k * d + c];
  z[r * d + c] += (s0 + s1) + (s2 + s3);
#else
  float s = 0;
  for (int k = 0; k < d; ++k) s += y[r * d + k] * W[k * d + c];
  z[r * d + c] += s;
#endif
}

extern "C" __global__ void silu(float* a, const float* z, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = z[i] / (1.0f + __expf(-z[i]));
}

extern "C" __global__ void residual_add(float* x, const float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 0.1f * a[i];
}

#ifndef VARIANT
constexpr int kPad = 16;  // floats between buffer sizes (BUF_PAD)

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rows = argc > 2 ? std::atoi(argv[2]) : 512;
  const int d = argc > 3 ? std::atoi(argv[3]) : 512;
  const size_t n = size_t(rows) * d;
  float *x, *y, *z, *a, *xs, *w, *W;
  // Distinct sizes: x n, y n+pad, z n+2pad, a n+3pad, xs n+4pad, w d, W d*d.
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&y, (n + kPad) * 4));
  CHECK(cudaMalloc(&z, (n + 2 * kPad) * 4));
  CHECK(cudaMalloc(&a, (n + 3 * kPad) * 4));
  CHECK(cudaMalloc(&xs, (n + 4 * kPad) * 4));
  CHECK(cudaMalloc(&w, size_t(d) * 4));
  CHECK(cudaMalloc(&W, size_t(d) * d * 4));
  std::vector<float> h(size_t(d) * d);
  srand(7);
  for (auto& v : h) v = (rand() / float(RAND_MAX) - 0.5f) * 0.1f;
  CHECK(cudaMemcpy(W, h.data(), size_t(d) * d * 4, cudaMemcpyHostToDevice));
  for (int i = 0; i < d; ++i) h[i] = 0.5f + i % 7 * 0.1f;
  CHECK(cudaMemcpy(w, h.data(), size_t(d) * 4, cudaMemcpyHostToDevice));
  std::vector<float> hx(n);
  for (auto& v : hx) v = rand() / float(RAND_MAX) - 0.5f;
  CHECK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int ew = int((n + 255) / 256);
  for (int it = 0; it < iters; ++it) {
    rms_norm<<<rows, 256, 0, s>>>(y, x, w, rows, d);
    CHECK(cudaMemcpyAsync(xs, x, n * 4, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaMemsetAsync(z, 0, n * 4, s));
    gemm<<<dim3((d + 127) / 128, rows), 128, 0, s>>>(z, y, W, rows, d);
    silu<<<ew, 256, 0, s>>>(a, z, int(n));
    residual_add<<<ew, 256, 0, s>>>(x, a, int(n));
    CHECK(cudaGetLastError());
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float v : hx) sum += v;
  std::printf("window_app: %d iterations, rows %d, d %d, checksum %.6f\n", iters, rows, d, sum);
  return 0;
}
#endif
