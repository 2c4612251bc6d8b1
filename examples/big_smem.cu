// Case 6: dynamic shared memory above the 48 KB default (96 KB), which needs
// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) first; replay must re-apply it.
// Each block stages a tile in shared memory and writes it back reversed and doubled.
#include <vector>

#include "common.cuh"

__global__ void reverseTiles(const float* in, float* out, int tile_elems) {
  extern __shared__ float tile[];
  const size_t base = size_t(blockIdx.x) * tile_elems;
  for (int j = threadIdx.x; j < tile_elems; j += blockDim.x) tile[j] = 2.0f * in[base + j];
  __syncthreads();
  for (int j = threadIdx.x; j < tile_elems; j += blockDim.x) out[base + j] = tile[tile_elems - 1 - j];
}

int main() {
  const int smem = 96 * 1024, tile_elems = smem / sizeof(float), tiles = 264;
  const int n = tile_elems * tiles;
  const size_t bytes = size_t(n) * sizeof(float);
  std::vector<float> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = float(i % 4093);
  float *din, *dout;
  CK(cudaMalloc(&din, bytes));
  CK(cudaMalloc(&dout, bytes));
  CK(cudaMemcpy(din, in.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0, bytes));
  CK(cudaFuncSetAttribute(reverseTiles, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  reverseTiles<<<tiles, 512, smem>>>(din, dout, tile_elems);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), dout, bytes, cudaMemcpyDeviceToHost));
  expect(out[0] == 2.0f * in[tile_elems - 1], "tile reversed");
  expect(out[tile_elems] == 2.0f * in[2 * tile_elems - 1], "second tile reversed");
  CK(cudaFree(din));
  CK(cudaFree(dout));
  print_checksum("big_smem", fnv1a(out.data(), bytes));
  return 0;
}
