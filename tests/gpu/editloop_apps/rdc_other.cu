// The second translation unit of editloop_e2e.sh's cub_rdc case: it includes CUB too, so the
// linked module has a second copy of every CUB tag object, and it has its own file-local
// counter of the same kind as rdc_main.cu's.
#include <cub/cub.cuh>

static __device__ unsigned int max_blocks;  // same name as rdc_main.cu's, another unit
constexpr int kBlock = 256;

__global__ void tile_sum(const float* in, float* out, int n) {
  using Reduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename Reduce::TempStorage tmp;
  const int i = blockIdx.x * kBlock + threadIdx.x;
  const float s = Reduce(tmp).Sum(i < n ? in[i] : 0.0f);
  if (threadIdx.x == 0) {
    out[blockIdx.x] = s;
    atomicAdd(&max_blocks, 1u);
  }
}

void launch_other(const float* in, float* out, int n) { tile_sum<<<n / kBlock, kBlock>>>(in, out, n); }
