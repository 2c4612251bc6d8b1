// editloop_e2e.sh, case cub_rdc: two translation units that both include <cub/cub.cuh>,
// compiled -rdc and linked into one module, so the module holds two copies of every CUB tag
// object under nvlink's __nv_static_ scope. The captured kernel (tile_max, here) uses a
// file-local counter; the reproducer recompiles this unit alone, whole-program.
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

static __device__ unsigned int max_blocks;  // file-local: __nv_static_ in the linked module
constexpr int kBlock = 256;

__global__ void tile_max(const float* in, float* out, int n) {
  using Reduce = cub::BlockReduce<float, kBlock>;
  __shared__ typename Reduce::TempStorage tmp;
  const int i = blockIdx.x * kBlock + threadIdx.x;
  const float m = Reduce(tmp).Reduce(i < n ? in[i] : -1.0f, cuda::maximum<>{});
  if (threadIdx.x == 0) {
    out[blockIdx.x] = m;  // kc:store
    atomicAdd(&max_blocks, 1u);
  }
}

void launch_other(const float* in, float* out, int n);  // rdc_other.cu

int main() {
  const int n = 1 << 18, blocks = n / kBlock;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = float((i * 37) % 101);
  float *din, *dout, *dother;
  CK(cudaMalloc(&din, n * sizeof(float)));
  CK(cudaMalloc(&dout, blocks * sizeof(float)));
  CK(cudaMalloc(&dother, blocks * sizeof(float)));
  CK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  for (int k = 0; k < 2; ++k) {
    tile_max<<<blocks, kBlock>>>(din, dout, n);
    CK(cudaGetLastError());
    launch_other(din, dother, n);
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> out(blocks);
  CK(cudaMemcpy(out.data(), dout, blocks * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("checksum cub_rdc %.1f\n", double(out[0]) + double(out[blocks - 1]));
  return 0;
}
