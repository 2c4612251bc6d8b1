// An RMSNorm over bf16 rows for the regimes suite's Llama-architecture run (llama_regimes.py
// calls it through ctypes in place of the model's own norm, the way serving stacks put their
// own norm kernels into a Hugging Face model). One warp per row, four rows per block, so the
// prefill shape (hundreds of rows) and the decode shape (one row per sequence) are two
// regimes of one kernel.
//
// Built three more ways as cubins with the same kernel (same mangled name, same parameters):
//   -DKC_VARIANT_TAIL     skips the last block when it is partial: right at every row count
//                         that is a multiple of 4, wrong at the others (the decode regime)
//   -DKC_VARIANT_BIGFAST  the same sums in the same order with eight loads in flight per lane
//                         (faster on large row counts) and, below 64 rows, a fixed wait of
//                         30000 SM cycles per warp standing for a decode path that was never
//                         tuned (slower on the small regime): per-regime speed-ups on both sides
//   (none)                the recompiled kernel itself
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void rms_norm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int rows, int cols,
                                float eps) {
  const int row = blockIdx.x * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
#ifdef KC_VARIANT_TAIL
  if (blockIdx.x * 4 + 3 >= rows) return;
#endif
  if (row >= rows) return;
  const __nv_bfloat16* xr = x + static_cast<size_t>(row) * cols;
  float ss = 0.f;
#ifdef KC_VARIANT_BIGFAST
  if (rows < 64) {
    const long long start = clock64();
    while (clock64() - start < 30000) {
    }
  }
  int c = lane;
  for (; c + 7 * 32 < cols; c += 8 * 32) {
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = __bfloat162float(xr[c + k * 32]);
#pragma unroll
    for (int k = 0; k < 8; ++k) ss += v[k] * v[k];
  }
  for (; c < cols; c += 32) {
    const float v = __bfloat162float(xr[c]);
    ss += v * v;
  }
#else
#pragma unroll 1
  for (int c = lane; c < cols; c += 32) {
    const float v = __bfloat162float(xr[c]);
    ss += v * v;
  }
#endif
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  const float inv = rsqrtf(ss / static_cast<float>(cols) + eps);
  __nv_bfloat16* yr = y + static_cast<size_t>(row) * cols;
#ifdef KC_VARIANT_BIGFAST
#pragma unroll 4
#else
#pragma unroll 1
#endif
  for (int c2 = lane; c2 < cols; c2 += 32)
    yr[c2] = __float2bfloat16(__bfloat162float(xr[c2]) * inv * __bfloat162float(w[c2]));
}

#ifndef KC_CUBIN_ONLY
// The library's one entry point: y = rms_norm(x) * w over `rows` rows of `cols`, on `stream`.
extern "C" int kc_rms_norm(const void* x, const void* w, void* y, int rows, int cols, float eps, void* stream) {
  const unsigned blocks = static_cast<unsigned>((rows + 3) / 4);
  rms_norm_kernel<<<blocks, 128, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(w), static_cast<__nv_bfloat16*>(y), rows,
      cols, eps);
  return static_cast<int>(cudaGetLastError());
}
#endif
