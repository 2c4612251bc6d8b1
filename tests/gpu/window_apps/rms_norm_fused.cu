// A fused RMSNorm for the Hugging Face Llama decoder layer (tests/gpu/window_e2e.sh, case
// llama_norm): LlamaRMSNorm in eager PyTorch runs eight kernels (to float, pow, mean, + eps,
// rsqrt, x * rsqrt, to bf16, weight * x) and writes seven intermediates; this one kernel reads
// the layer's bf16 hidden state and the norm's weight and writes only the result. One block per
// row. It rounds where PyTorch's kernels round (the product x * rsqrt(var + eps) in float,
// rounded to bf16; the weight product in float, rounded), so only the mean's summation order
// differs from PyTorch's reduce kernel (a difference of an ulp in the variance, at most one
// bf16 step in a few outputs: judged within bf16's tolerance).
//   rms_norm_fused      the fusion
//   rms_norm_fused_bad  a wrong one: it forgets the weight (a real slip when fusing a norm)
// Built as a cubin (nvcc -cubin); launched by `kerncap window validate --replace` from a
// launches.json that window_apps/rms_norm_launches.py writes from the capture.
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 128;

// Sum of v over the block (kThreads threads), returned to every thread.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kThreads / 32];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  return total;
}

template <bool kWeighted>
__device__ void rms_norm_row(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out, int hidden,
                             float eps) {
  const long long row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * hidden;
  __nv_bfloat16* yr = out + row * hidden;
  float sq = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += kThreads) {
    const float v = __bfloat162float(xr[i]);
    sq += v * v;
  }
  // MeanOps multiplies the sum by 1/N (a float) rather than dividing by N.
  const float rstd = rsqrtf(block_sum(sq) * (1.0f / static_cast<float>(hidden)) + eps);
  for (int i = threadIdx.x; i < hidden; i += kThreads) {
    const __nv_bfloat16 y = __float2bfloat16(__bfloat162float(xr[i]) * rstd);
    yr[i] = kWeighted ? __float2bfloat16(__bfloat162float(w[i]) * __bfloat162float(y)) : y;
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
    rms_norm_fused(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out, int hidden, float eps) {
  rms_norm_row<true>(x, w, out, hidden, eps);
}

extern "C" __global__ void __launch_bounds__(kThreads)
    rms_norm_fused_bad(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* out, int hidden, float eps) {
  rms_norm_row<false>(x, w, out, hidden, eps);
}
