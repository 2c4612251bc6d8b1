// A kernel built on CUB: its translation unit includes <cub/cub.cuh>, so (CUDA 13) the module
// holds internal-linkage __device__ objects of CUB/libcu++ whose names carry a prefix made
// from this file's name and contents, and the kernel itself counts blocks in an
// anonymous-namespace __device__ variable (the same kind of name). A reproducer recompiles
// this file as kernel_variant.cu: its globals must still bind to the captured ones
// (tests/gpu/cub_e2e.sh). Values are small integers, so every sum is exact in float.
#include <vector>

#include <cub/cub.cuh>

#include "common.cuh"

namespace {
__device__ unsigned int blocks_seen;  // written by the kernel: compared after replay
}

constexpr int kBlock = 256;

__global__ void block_sums(const float* in, float* out, int n) {
  using Reduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename Reduce::TempStorage tmp;
  const int i = blockIdx.x * kBlock + threadIdx.x;
  const float s = Reduce(tmp).Sum(i < n ? in[i] : 0.0f);
  if (threadIdx.x == 0) {
    out[blockIdx.x] = s;  // kc:store
    atomicAdd(&blocks_seen, 1u);
  }
}

int main() {
  const int n = 1 << 20, blocks = n / kBlock, launches = 3;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = float(i % 17);
  float *din, *dout;
  CK(cudaMalloc(&din, n * sizeof(float)));
  CK(cudaMalloc(&dout, blocks * sizeof(float)));
  CK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int k = 0; k < launches; ++k) {
    block_sums<<<blocks, kBlock>>>(din, dout, n);
    CK_LAUNCH();
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> out(blocks);
  CK(cudaMemcpy(out.data(), dout, blocks * sizeof(float), cudaMemcpyDeviceToHost));
  unsigned int seen = 0;
  CK(cudaMemcpyFromSymbol(&seen, blocks_seen, sizeof(seen)));
  for (int b = 0; b < blocks; ++b) {
    float want = 0;
    for (int t = 0; t < kBlock; ++t) want += float((b * kBlock + t) % 17);
    expect(out[b] == want, "block sum");
  }
  expect(seen == unsigned(blocks * launches), "every block counted");
  CK(cudaFree(din));
  CK(cudaFree(dout));
  print_checksum("cub_reduce", fnv1a(out.data(), blocks * sizeof(float)));
  return 0;
}
