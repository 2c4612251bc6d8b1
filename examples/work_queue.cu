// A stateful kernel: each block takes its tile from a work counter in global memory (as
// CUB's onesweep radix sort and other decoupled look-back kernels do), and the counter must
// be 0 when the launch starts. The application resets it before every launch; a replay that
// launched twice without putting the counter back would hand out tiles past the grid, which
// the kernel refuses with a trap (an "illegal instruction" fault) instead of writing out of
// bounds. tests/gpu/stateful_e2e.sh replays it 100 times in a row and validates after.
#include <vector>

#include "common.cuh"

constexpr int kBlock = 128;

__global__ void take_tiles(unsigned int* next_tile, const float* in, float* out) {
  __shared__ unsigned int tile;
  if (threadIdx.x == 0) tile = atomicAdd(next_tile, 1u);
  __syncthreads();
  if (tile >= gridDim.x) __trap();  // the counter was not reset: tiles past the grid
  const unsigned int i = tile * kBlock + threadIdx.x;
  out[i] = 2.0f * in[i] + 1.0f;  // kc:store
}

int main() {
  const int tiles = 4096, n = tiles * kBlock, launches = 3;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = float(i % 31);
  float *din, *dout;
  unsigned int* counter;
  CK(cudaMalloc(&din, n * sizeof(float)));
  CK(cudaMalloc(&dout, n * sizeof(float)));
  CK(cudaMalloc(&counter, sizeof(unsigned int)));
  CK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int k = 0; k < launches; ++k) {
    CK(cudaMemset(counter, 0, sizeof(unsigned int)));
    take_tiles<<<tiles, kBlock>>>(counter, din, dout);
    CK_LAUNCH();
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> out(n);
  CK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) expect(out[i] == 2.0f * float(i % 31) + 1.0f, "every element written once");
  unsigned int taken = 0;
  CK(cudaMemcpy(&taken, counter, sizeof(taken), cudaMemcpyDeviceToHost));
  expect(taken == unsigned(tiles), "every tile taken once");
  CK(cudaFree(din));
  CK(cudaFree(dout));
  CK(cudaFree(counter));
  print_checksum("work_queue", fnv1a(out.data(), n * sizeof(float)));
  return 0;
}
