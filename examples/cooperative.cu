// Case 12b: a cooperative launch (cudaLaunchCooperativeKernel) whose kernel synchronises
// the whole grid: every block writes a partial sum, grid.sync(), block 0 adds them up.
// Integer sums, so the result is exact and the order fixed.
#include <cooperative_groups.h>

#include <vector>

#include "common.cuh"

namespace cg = cooperative_groups;

__global__ void gridSum(const int* in, long long* partials, long long* total, int n) {
  __shared__ long long acc[256];
  cg::grid_group grid = cg::this_grid();
  long long s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += in[i];
  acc[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) acc[threadIdx.x] += acc[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = acc[0];
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    long long t = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) t += partials[b];
    *total = t;
  }
}

int main() {
  const int n = 1 << 22, threads = 256;
  int dev = 0, coop = 0, sms = 0, per_sm = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  expect(coop != 0, "device supports cooperative launch");
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gridSum, threads, 0));
  const int blocks = sms * (per_sm < 2 ? per_sm : 2);
  std::vector<int> in(n);
  long long expected = 0;
  for (int i = 0; i < n; ++i) expected += in[i] = (i * 13) % 1000 - 300;
  int* din;
  long long *dpartials, *dtotal;
  CK(cudaMalloc(&din, n * sizeof(int)));
  CK(cudaMalloc(&dpartials, blocks * sizeof(long long)));
  CK(cudaMalloc(&dtotal, sizeof(long long)));
  CK(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemset(dtotal, 0, sizeof(long long)));
  int nn = n;
  void* args[] = {&din, &dpartials, &dtotal, &nn};
  CK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(gridSum), dim3(blocks), dim3(threads), args, 0, nullptr));
  CK(cudaDeviceSynchronize());
  long long total = 0;
  CK(cudaMemcpy(&total, dtotal, sizeof total, cudaMemcpyDeviceToHost));
  expect(total == expected, "grid sum");
  CK(cudaFree(din));
  CK(cudaFree(dpartials));
  CK(cudaFree(dtotal));
  std::printf("total %lld\n", total);  // independent of the grid size, so diffable across GPUs
  print_checksum("cooperative", fnv1a(&total, sizeof total));
  return 0;
}
