// A TMA tile store (cp.async.bulk.tensor) whose CUtensorMap was encoded on the host
// (cuTensorMapEncodeTiled) and copied into device memory: the kernel reads it from a global
// pointer parameter, so the only pointer to the output is the map's global address, in
// device memory. The Compute Sanitizer sees the input loads, not the TMA stores.
#include "common.cuh"

constexpr int kWidth = 256, kHeight = 256;

__global__ void tma_tile_store(const CUtensorMap* map, const float* in, int width, float scale) {
  __shared__ alignas(128) float tile[kTileEdge][kTileEdge];
  const int x0 = blockIdx.x * kTileEdge, y0 = blockIdx.y * kTileEdge;
  for (int i = threadIdx.x; i < kTileEdge * kTileEdge; i += blockDim.x) {
    const int r = i / kTileEdge, c = i % kTileEdge;
    tile[r][c] = in[static_cast<size_t>(y0 + r) * width + x0 + c] * scale + 1.0f;
  }
  fence_smem_for_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    const uint64_t m = reinterpret_cast<uint64_t>(map);
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(m) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(m), "r"(x0),
                 "r"(y0), "r"(smem_addr(&tile[0][0]))
                 : "memory");
    bulk_wait_all();
  }
}

#ifndef KC_KERNEL_ONLY
int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 3;
  const size_t n = static_cast<size_t>(kWidth) * kHeight;
  std::vector<float> host_in(n);
  for (size_t i = 0; i < n; ++i) host_in[i] = static_cast<float>((i * 31) % 97) * 0.5f;
  float *in = nullptr, *out = nullptr;
  CUtensorMap* d_map = nullptr;
  KC_RT(cudaMalloc(&in, n * sizeof(float)));
  KC_RT(cudaMalloc(&out, n * sizeof(float)));
  KC_RT(cudaMalloc(&d_map, sizeof(CUtensorMap)));  // 256-byte aligned: the 64 a map needs
  KC_RT(cudaMemcpy(in, host_in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  KC_RT(cudaMemset(out, 0, n * sizeof(float)));
  const CUtensorMap map = encode_map(out, kWidth, kHeight);
  KC_RT(cudaMemcpy(d_map, &map, sizeof map, cudaMemcpyHostToDevice));
  for (int it = 0; it < iterations; ++it)
    tma_tile_store<<<dim3(kWidth / kTileEdge, kHeight / kTileEdge), 128>>>(d_map, in, kWidth, 2.0f);
  KC_RT(cudaGetLastError());
  KC_RT(cudaDeviceSynchronize());
  std::vector<float> got(n), want(n);
  KC_RT(cudaMemcpy(got.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) want[i] = host_in[i] * 2.0f + 1.0f;
  return check(got, want, "tma_store");
}
#endif
