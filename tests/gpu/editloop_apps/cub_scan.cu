// editloop_e2e.sh, case cub_scan: a kernel whose translation unit includes all of
// <cub/cub.cuh> (CUDA 13: dozens of internal-linkage __device__ objects of CUB, libcu++ and
// Thrust, named with this file's prefix), reads a __constant__ table and counts tiles in an
// anonymous-namespace __device__ variable. The reproducer recompiles it as kernel_variant.cu.
// Values are small integers, so every sum is exact in float.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cub/cub.cuh>

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

namespace {
__device__ unsigned int tiles_done;  // written by the kernel: compared after replay
}
__constant__ float weights[4] = {1.0f, 2.0f, 3.0f, 4.0f};

constexpr int kBlock = 128;

__global__ void scan_tiles(const float* in, float* out, int n) {
  using Scan = cub::BlockScan<float, kBlock>;
  __shared__ typename Scan::TempStorage tmp;
  const int i = blockIdx.x * kBlock + threadIdx.x;
  float v = i < n ? in[i] * weights[threadIdx.x & 3] : 0.0f;
  Scan(tmp).InclusiveSum(v, v);
  if (i < n) out[i] = v;  // kc:store
  if (threadIdx.x == 0) atomicAdd(&tiles_done, 1u);
}

int main() {
  const int n = 1 << 18, blocks = n / kBlock;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = float(i % 7);
  float *din, *dout;
  CK(cudaMalloc(&din, n * sizeof(float)));
  CK(cudaMalloc(&dout, n * sizeof(float)));
  CK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int k = 0; k < 3; ++k) {
    scan_tiles<<<blocks, kBlock>>>(din, dout, n);
    CK(cudaGetLastError());
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> out(n);
  CK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("checksum cub_scan %.1f\n", double(out[kBlock - 1]) + double(out[n - 1]));
  return 0;
}
