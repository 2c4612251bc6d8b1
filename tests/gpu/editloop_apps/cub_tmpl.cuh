#pragma once
// editloop_e2e.sh, case cub_tmpl: a kernel template in a header that includes CUB, with a
// __constant__ table and an anonymous-namespace tile counter. cub_tmpl.cu instantiates it
// three times; the reproducer recompiles only the captured instantiation from
// kernel_instance.cu, whose internal-linkage globals are named after that file.
#include <cub/block/block_scan.cuh>

namespace {
__device__ unsigned int tmpl_tiles;  // written by the kernel: compared after replay
}  // namespace
__constant__ float tmpl_weights[4] = {1.0f, 2.0f, 3.0f, 4.0f};

template <typename T, int Block>
__global__ void tmpl_scan(const T* in, T* out, int n) {
  using Scan = cub::BlockScan<T, Block>;
  __shared__ typename Scan::TempStorage tmp;
  const int i = blockIdx.x * Block + threadIdx.x;
  T v = i < n ? in[i] * static_cast<T>(tmpl_weights[threadIdx.x & 3]) : T(0);
  Scan(tmp).InclusiveSum(v, v);
  if (i < n) out[i] = v;  // kc:store
  if (threadIdx.x == 0) atomicAdd(&tmpl_tiles, 1u);
}
