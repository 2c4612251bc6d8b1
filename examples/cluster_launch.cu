// Case 12a: cudaLaunchKernelEx with a cluster-dimension attribute (sm_90). Each block reads
// its neighbour's shared memory through distributed shared memory and writes the cluster
// size into its output, so a replay launched without the cluster attribute (cluster of 1)
// produces different bytes and validate fails.
#include <cooperative_groups.h>

#include <vector>

#include "common.cuh"

namespace cg = cooperative_groups;

__global__ void clusterExchange(const int* in, int* out, int n) {
  __shared__ int buf[256];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0;
  cluster.sync();
  const int* peer = cluster.map_shared_rank(buf, (rank + 1) % cluster.num_blocks());
  if (i < n) out[i] = 2 * peer[threadIdx.x] + int(rank) + 1000 * int(cluster.num_blocks());
  cluster.sync();  // keep every block's shared memory alive until its peers have read it
}

int main() {
  const int cluster = 4, blocks = 512, n = blocks * 256;
  std::vector<int> in(n), out(n);
  for (int i = 0; i < n; ++i) in[i] = (i * 31) % 1009;
  int *din, *dout;
  CK(cudaMalloc(&din, n * sizeof(int)));
  CK(cudaMalloc(&dout, n * sizeof(int)));
  CK(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0, n * sizeof(int)));

  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(256);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, clusterExchange, static_cast<const int*>(din), dout, n));
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
  // Block 0 (rank 0) reads block 1's slice.
  expect(out[0] == 2 * in[256] + 0 + 1000 * cluster, "distributed shared memory exchange");
  CK(cudaFree(din));
  CK(cudaFree(dout));
  print_checksum("cluster_launch", fnv1a(out.data(), n * sizeof(int)));
  return 0;
}
