// Grouped outputs through a device array of pointers (as a grouped GEMM takes A/B/C/D): each
// block makes one 4 KiB tile of its group in shared memory and stores it with a bulk copy
// (cp.async.bulk, the TMA without a tensor map), which the Compute Sanitizer does not see.
// The groups' outputs share one allocation at group offsets (as CUTLASS's example 57 lays
// them out); the kernel parameters point only at the pointer arrays.
//   -DKC_SKIP_LAST_GROUP: the variant that never writes the last group.
#include "common.cuh"

constexpr int kGroups = 4, kTileFloats = kTileEdge * kTileEdge;
[[maybe_unused]] constexpr int kTiles[kGroups] = {3, 5, 2, 6};

__global__ void bulk_group_store(const float* const* in, float* const* out, const int* tile_start, int groups,
                                 float scale) {
  __shared__ alignas(128) float buf[kTileFloats];
  const int t = blockIdx.x;
  int g = 0;
  while (g + 1 < groups && t >= tile_start[g + 1]) ++g;
#ifdef KC_SKIP_LAST_GROUP
  if (g == groups - 1) return;
#endif
  const int local = t - tile_start[g];
  const float* src = in[g] + static_cast<size_t>(local) * kTileFloats;
  for (int i = threadIdx.x; i < kTileFloats; i += blockDim.x) buf[i] = src[i] * scale + static_cast<float>(g);
  fence_smem_for_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint64_t dst = __cvta_generic_to_global(out[g] + static_cast<size_t>(local) * kTileFloats);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem_addr(buf)),
                 "r"(kTileFloats * 4)
                 : "memory");
    bulk_wait_all();
  }
}

#ifndef KC_KERNEL_ONLY
int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 3;
  std::vector<int> start(kGroups + 1, 0);
  for (int g = 0; g < kGroups; ++g) start[g + 1] = start[g] + kTiles[g];
  const int total = start[kGroups];
  std::vector<float*> in(kGroups), out(kGroups);
  std::vector<std::vector<float>> host_in(kGroups);
  float* block_d = nullptr;
  KC_RT(cudaMalloc(&block_d, static_cast<size_t>(total) * kTileFloats * sizeof(float)));
  KC_RT(cudaMemset(block_d, 0, static_cast<size_t>(total) * kTileFloats * sizeof(float)));
  for (int g = 0; g < kGroups; ++g) {
    const size_t n = static_cast<size_t>(kTiles[g]) * kTileFloats;
    host_in[g].resize(n);
    for (size_t i = 0; i < n; ++i) host_in[g][i] = static_cast<float>((i * 7 + g * 13) % 101) * 0.25f;
    KC_RT(cudaMalloc(&in[g], n * sizeof(float)));
    KC_RT(cudaMemcpy(in[g], host_in[g].data(), n * sizeof(float), cudaMemcpyHostToDevice));
    out[g] = block_d + static_cast<size_t>(start[g]) * kTileFloats;
  }
  float **d_in = nullptr, **d_out = nullptr;
  int* d_start = nullptr;
  KC_RT(cudaMalloc(&d_in, kGroups * sizeof(float*)));
  KC_RT(cudaMalloc(&d_out, kGroups * sizeof(float*)));
  KC_RT(cudaMalloc(&d_start, (kGroups + 1) * sizeof(int)));
  KC_RT(cudaMemcpy(d_in, in.data(), kGroups * sizeof(float*), cudaMemcpyHostToDevice));
  KC_RT(cudaMemcpy(d_out, out.data(), kGroups * sizeof(float*), cudaMemcpyHostToDevice));
  KC_RT(cudaMemcpy(d_start, start.data(), (kGroups + 1) * sizeof(int), cudaMemcpyHostToDevice));
  for (int it = 0; it < iterations; ++it) bulk_group_store<<<total, 128>>>(d_in, d_out, d_start, kGroups, 1.5f);
  KC_RT(cudaGetLastError());
  KC_RT(cudaDeviceSynchronize());
  std::vector<float> got(static_cast<size_t>(total) * kTileFloats), want(got.size());
  KC_RT(cudaMemcpy(got.data(), block_d, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int g = 0; g < kGroups; ++g)
    for (size_t i = 0; i < host_in[g].size(); ++i)
      want[static_cast<size_t>(start[g]) * kTileFloats + i] = host_in[g][i] * 1.5f + static_cast<float>(g);
  return check(got, want, "bulk_groups");
}
#endif
