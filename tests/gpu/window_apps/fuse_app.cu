// A three-kernel "layer" for tests/gpu/window_e2e.sh's live-out and strong cases, on one
// stream, ITER times:
//   fnorm(h <- x * rms(x) * w)  ->  fgemm(t <- h W)  ->  fact(out <- silu(t))  ->  fconsume(acc += out; x updated)
// fnorm, fgemm and fact take one struct holding every buffer, so that a fused replacement can be
// swapped in for all three (`--swap 0=fused.cubin --swap 1=fused.cubin --swap 2=fused.cubin`):
// fnorm and fgemm do nothing and fact computes out from x, w and W directly, never writing the
// intermediates h and t. fconsume takes only x, out and acc: after the window of the last
// iteration (fnorm@ITER-1..fact) nothing reaches h or t again (dead), out is read (live).
//
//   fuse_app [ITER=4] [ROWS=256] [D=256] [h2d]
// With h2d, each iteration also copies new weights W from the host (cudaMemcpyAsync) between
// fnorm and fgemm: a window with a host-to-device copy whose bytes only the capture holds.
// Variants, built from this file with -DVARIANT -DVARIANT_<name>:
//   fused      the fused replacement above (same arithmetic, equal within fp32 tolerance)
//   fused_bad  the same, leaving the last row of out alone (a wrong replacement)
// fused.cubin also holds fused_only(x, w, W, out, rows, d): the fused computation as a new kernel.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

struct Layer {
  const float* x;
  const float* w;
  const float* W;
  float* h;
  float* t;
  float* out;
  int rows, d;
};

// The row's inverse RMS, summed serially (the fused act computes it the same way).
__device__ float inv_rms(const float* x, int r, int d) {
  float s = 0;
  for (int k = 0; k < d; ++k) s += x[r * d + k] * x[r * d + k];
  return rsqrtf(s / d + 1e-6f);
}

extern "C" __global__ void fnorm(Layer L) {
#if !defined(VARIANT_fused) && !defined(VARIANT_fused_bad)
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= L.rows * L.d) return;
  const int r = i / L.d, c = i % L.d;
  L.h[i] = L.x[i] * inv_rms(L.x, r, L.d) * L.w[c];
#endif
}

extern "C" __global__ void fgemm(Layer L) {
#if !defined(VARIANT_fused) && !defined(VARIANT_fused_bad)
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= L.rows * L.d) return;
  const int r = i / L.d, c = i % L.d;
  float s = 0;
  for (int k = 0; k < L.d; ++k) s += L.h[r * L.d + k] * L.W[k * L.d + c];
  L.t[i] = s;
#endif
}

extern "C" __global__ void fact(Layer L) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= L.rows * L.d) return;
#if defined(VARIANT_fused) || defined(VARIANT_fused_bad)
  const int r = i / L.d, c = i % L.d;
#if defined(VARIANT_fused_bad)
  if (r == L.rows - 1) return;
#endif
  const float inv = inv_rms(L.x, r, L.d);
  float s = 0;
  for (int k = 0; k < L.d; ++k) s += L.x[r * L.d + k] * inv * L.w[k] * L.W[k * L.d + c];
  L.out[i] = s / (1.0f + __expf(-s));
#else
  L.out[i] = L.t[i] / (1.0f + __expf(-L.t[i]));
#endif
}

#if defined(VARIANT_fused)
// The same fused computation as one new kernel with its own parameters, for a replacement
// (`--replace 0..2=launches.json`: pointers built from the window's regions).
extern "C" __global__ void fused_only(const float* x, const float* w, const float* W, float* out, int rows, int d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * d) return;
  const int r = i / d, c = i % d;
  const float inv = inv_rms(x, r, d);
  float s = 0;
  for (int k = 0; k < d; ++k) s += x[r * d + k] * inv * w[k] * W[k * d + c];
  out[i] = s / (1.0f + __expf(-s));
}
#endif

extern "C" __global__ void fconsume(float* x, const float* out, float* acc, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  acc[i] += out[i];
  x[i] = 0.5f * x[i] + 0.1f * out[i];
}

#ifndef VARIANT
int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rows = argc > 2 ? std::atoi(argv[2]) : 256;
  const int d = argc > 3 ? std::atoi(argv[3]) : 256;
  const bool h2d = argc > 4 && std::string(argv[4]) == "h2d";
  const size_t n = size_t(rows) * d;
  // Distinct sizes (the suite tells regions apart by size): x n, h n+16, t n+32, out n+48,
  // acc n+64, w d, W d*d+80 floats (d*d alone equals n when ROWS = D).
  float *x, *h, *t, *out, *acc, *w, *W;
  CHECK(cudaMalloc(&x, n * 4));
  CHECK(cudaMalloc(&h, (n + 16) * 4));
  CHECK(cudaMalloc(&t, (n + 32) * 4));
  CHECK(cudaMalloc(&out, (n + 48) * 4));
  CHECK(cudaMalloc(&acc, (n + 64) * 4));
  CHECK(cudaMalloc(&w, size_t(d) * 4));
  CHECK(cudaMalloc(&W, (size_t(d) * d + 80) * 4));
  std::vector<float> hw(size_t(d) * d);
  srand(11);
  for (auto& v : hw) v = (rand() / float(RAND_MAX) - 0.5f) * 0.1f;
  CHECK(cudaMemcpy(W, hw.data(), size_t(d) * d * 4, cudaMemcpyHostToDevice));
  for (int i = 0; i < d; ++i) hw[i] = 0.5f + i % 5 * 0.1f;
  CHECK(cudaMemcpy(w, hw.data(), size_t(d) * 4, cudaMemcpyHostToDevice));
  std::vector<float> hx(n);
  for (auto& v : hx) v = rand() / float(RAND_MAX) - 0.5f;
  CHECK(cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(acc, 0, n * 4));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const Layer L{x, w, W, h, t, out, rows, d};
  const int blocks = int((n + 255) / 256);
  for (int it = 0; it < iters; ++it) {
    fnorm<<<blocks, 256, 0, s>>>(L);
    if (h2d) {
      for (auto& v : hw) v *= -1.0f;  // new weights every iteration, from pageable host memory
      CHECK(cudaMemcpyAsync(W, hw.data(), size_t(d) * d * 4, cudaMemcpyHostToDevice, s));
      CHECK(cudaStreamSynchronize(s));  // hw is changed next iteration
    }
    fgemm<<<blocks, 256, 0, s>>>(L);
    fact<<<blocks, 256, 0, s>>>(L);
    fconsume<<<blocks, 256, 0, s>>>(x, out, acc, int(n));
    CHECK(cudaGetLastError());
  }
  CHECK(cudaStreamSynchronize(s));
  std::vector<float> ha(n);
  CHECK(cudaMemcpy(ha.data(), acc, n * 4, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (float v : ha) sum += v;
  std::printf("fuse_app: %d iterations, rows %d, d %d, checksum %.6f\n", iters, rows, d, sum);
  return 0;
}
#endif
