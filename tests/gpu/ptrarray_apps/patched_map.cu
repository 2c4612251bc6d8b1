// Tensor maps patched on the device, as CUTLASS's pointer-array grouped GEMM does: a template
// map (encoded on the host over a placeholder address, in device memory) is copied into
// shared memory by each block, its global address replaced with its group's output pointer
// from a device array of pointers (tensormap.replace), published into a per-block slot of a
// workspace (tensormap.cp_fenceproxy) and used from there for the TMA store. The groups'
// outputs share one allocation.
#include "common.cuh"

constexpr int kGroups = 3, kEdge = 128;  // each group: a 128x128 fp32 output, 4x4 tiles

__global__ void patched_map_store(const CUtensorMap* tmpl, CUtensorMap* work, float* const* out, const float* in,
                                  float scale) {
  __shared__ alignas(128) CUtensorMap smap;
  __shared__ alignas(128) float tile[kTileEdge][kTileEdge];
  const int g = blockIdx.z, x0 = blockIdx.x * kTileEdge, y0 = blockIdx.y * kTileEdge;
  const int slot = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  for (int i = threadIdx.x; i < kTileEdge * kTileEdge; i += blockDim.x) {
    const int r = i / kTileEdge, c = i % kTileEdge;
    tile[r][c] = in[static_cast<size_t>(y0 + r) * kEdge + x0 + c] * scale + static_cast<float>(g);
  }
  fence_smem_for_async();
  const uint64_t slot_addr = reinterpret_cast<uint64_t>(work + slot);
  if (threadIdx.x < 32) {
    reinterpret_cast<int*>(&smap)[threadIdx.x] = reinterpret_cast<const int*>(tmpl)[threadIdx.x];
    __syncwarp();
    if (threadIdx.x == 0)
      asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(smem_addr(&smap)),
                   "l"(reinterpret_cast<uint64_t>(out[g]))
                   : "memory");
    __syncwarp();
    asm volatile(
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;" ::"l"(
            slot_addr),
        "r"(smem_addr(&smap))
        : "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(slot_addr) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(slot_addr),
                 "r"(x0), "r"(y0), "r"(smem_addr(&tile[0][0]))
                 : "memory");
    bulk_wait_all();
  }
}

#ifndef KC_KERNEL_ONLY
int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 3;
  const size_t per = static_cast<size_t>(kEdge) * kEdge;
  std::vector<float> host_in(per);
  for (size_t i = 0; i < per; ++i) host_in[i] = static_cast<float>((i * 17) % 89) * 0.125f;
  float *in = nullptr, *block_d = nullptr, **d_out = nullptr;
  CUtensorMap *d_tmpl = nullptr, *d_work = nullptr;
  const dim3 grid(kEdge / kTileEdge, kEdge / kTileEdge, kGroups);
  const int blocks = static_cast<int>(grid.x * grid.y * grid.z);
  KC_RT(cudaMalloc(&in, per * sizeof(float)));
  KC_RT(cudaMalloc(&block_d, kGroups * per * sizeof(float)));
  KC_RT(cudaMalloc(&d_out, kGroups * sizeof(float*)));
  KC_RT(cudaMalloc(&d_tmpl, sizeof(CUtensorMap)));
  KC_RT(cudaMalloc(&d_work, blocks * sizeof(CUtensorMap)));
  KC_RT(cudaMemcpy(in, host_in.data(), per * sizeof(float), cudaMemcpyHostToDevice));
  KC_RT(cudaMemset(block_d, 0, kGroups * per * sizeof(float)));
  KC_RT(cudaMemset(d_work, 0, blocks * sizeof(CUtensorMap)));
  std::vector<float*> out(kGroups);
  for (int g = 0; g < kGroups; ++g) out[g] = block_d + g * per;
  KC_RT(cudaMemcpy(d_out, out.data(), kGroups * sizeof(float*), cudaMemcpyHostToDevice));
  const CUtensorMap tmpl = encode_map(block_d, kEdge, kEdge);  // the placeholder: group 0's output
  KC_RT(cudaMemcpy(d_tmpl, &tmpl, sizeof tmpl, cudaMemcpyHostToDevice));
  for (int it = 0; it < iterations; ++it) patched_map_store<<<grid, 128>>>(d_tmpl, d_work, d_out, in, 3.0f);
  KC_RT(cudaGetLastError());
  KC_RT(cudaDeviceSynchronize());
  std::vector<float> got(kGroups * per), want(kGroups * per);
  KC_RT(cudaMemcpy(got.data(), block_d, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int g = 0; g < kGroups; ++g)
    for (size_t i = 0; i < per; ++i) want[g * per + i] = host_in[i] * 3.0f + static_cast<float>(g);
  return check(got, want, "patched_map");
}
#endif
