// Case 11: mapped pinned host memory (cudaHostAlloc Mapped). The kernel reads its input
// and writes its output through the device pointer of host memory (zero copy), and reads
// weights from ordinary device memory. Replay restores the host ranges as device memory
// at the same addresses.
#include "common.cuh"

__global__ void zeroCopyScale(const float* in, float* out, const float* weights, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * weights[i % 256] + 1.0f;
}

int main() {
  const int n = 1 << 18;
  const size_t bytes = n * sizeof(float);
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  float *hin, *hout, *din, *dout, *dweights;
  CK(cudaHostAlloc(&hin, bytes, cudaHostAllocMapped));
  CK(cudaHostAlloc(&hout, bytes, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&din, hin, 0));
  CK(cudaHostGetDevicePointer(&dout, hout, 0));
  float w[256];
  for (int i = 0; i < 256; ++i) w[i] = 0.5f + float(i % 9);
  for (int i = 0; i < n; ++i) {
    hin[i] = float(i % 333);
    hout[i] = -1.0f;
  }
  CK(cudaMalloc(&dweights, sizeof w));
  CK(cudaMemcpy(dweights, w, sizeof w, cudaMemcpyHostToDevice));
  zeroCopyScale<<<(n + 255) / 256, 256>>>(din, dout, dweights, n);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < n; i += 997) expect(hout[i] == hin[i] * w[i % 256] + 1.0f, "out through mapped memory");
  const uint64_t h = fnv1a(hout, bytes);
  CK(cudaFreeHost(hin));
  CK(cudaFreeHost(hout));
  CK(cudaFree(dweights));
  print_checksum("mapped_host", h);
  return 0;
}
