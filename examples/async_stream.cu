// Case 9: a non-blocking stream and stream-ordered memory (cudaMallocAsync, which comes
// from the default memory pool at 0x302000000-ish addresses). Two launches of a 3-point
// smoothing kernel ping-pong between two async buffers; the suite captures launch 1.
#include <vector>

#include "common.cuh"

__global__ void smooth3(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float l = in[i > 0 ? i - 1 : i], r = in[i < n - 1 ? i + 1 : i];
  out[i] = 0.25f * l + 0.5f * in[i] + 0.25f * r;
}

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* host;
  CK(cudaMallocHost(&host, bytes));  // pinned, so the async copies really are async
  for (int i = 0; i < n; ++i) host[i] = float((i * 7) % 64);
  float *d0, *d1;
  CK(cudaMallocAsync(&d0, bytes, s));
  CK(cudaMallocAsync(&d1, bytes, s));
  CK(cudaMemcpyAsync(d0, host, bytes, cudaMemcpyHostToDevice, s));
  smooth3<<<(n + 255) / 256, 256, 0, s>>>(d0, d1, n);
  CK_LAUNCH();
  smooth3<<<(n + 255) / 256, 256, 0, s>>>(d1, d0, n);
  CK_LAUNCH();
  CK(cudaMemcpyAsync(host, d0, bytes, cudaMemcpyDeviceToHost, s));
  CK(cudaFreeAsync(d0, s));
  CK(cudaFreeAsync(d1, s));
  CK(cudaStreamSynchronize(s));
  const uint64_t h = fnv1a(host, bytes);
  CK(cudaFreeHost(host));
  CK(cudaStreamDestroy(s));
  print_checksum("async_stream", h);
  return 0;
}
