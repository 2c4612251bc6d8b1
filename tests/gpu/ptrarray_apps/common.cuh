// What the ptrarray suite's programs share: error checks, the bulk-copy and TMA PTX they use
// (inline, sm_90a), and the check of the result against a host reference.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define KC_RT(x)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define KC_DRV(x)                                                                                 \
  do {                                                                                            \
    CUresult r_ = (x);                                                                            \
    if (r_ != CUDA_SUCCESS) {                                                                     \
      const char* s_ = nullptr;                                                                   \
      cuGetErrorString(r_, &s_);                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_ ? s_ : "?");            \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

constexpr int kTileEdge = 32;  // 32x32 fp32 tiles: 4 KiB of shared memory

__device__ inline uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Shared-memory writes by the threads, made visible to the async proxy (TMA) that reads them.
__device__ inline void fence_smem_for_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ inline void bulk_wait_all() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// A 2-D fp32 tensor map over `base` (width x height, row-major), 32x32 boxes.
inline CUtensorMap encode_map(float* base, uint64_t width, uint64_t height) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {width, height}, strides[1] = {width * sizeof(float)};
  const cuuint32_t box[2] = {kTileEdge, kTileEdge}, elem[2] = {1, 1};
  KC_DRV(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box, elem,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  // Where the map keeps the address (kerncap finds pointers as 8-byte words): for the log.
  uint64_t w[16];
  std::memcpy(w, &map, sizeof w);
  for (int i = 0; i < 16; ++i)
    if (w[i] == reinterpret_cast<uint64_t>(base)) std::printf("tensor map: global address is word %d\n", i);
  return map;
}

inline int check(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-5f * (1 + std::fabs(want[i]))) ++bad;
  std::printf("%s: %zu of %zu values wrong\n", what, bad, got.size());
  return bad ? 1 : 0;
}
