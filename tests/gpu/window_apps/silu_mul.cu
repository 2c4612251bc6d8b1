// A fused SiLU·multiply for the Hugging Face Llama MLP (tests/gpu/window_e2e.sh, case llama_fuse):
// down_proj(silu(gate_proj(x)) * up_proj(x)) runs PyTorch's silu kernel, up_proj's GEMM and its
// mul kernel; this one kernel computes m = silu(g) * u from the two GEMMs' outputs and never
// writes silu(g), the intermediate. It rounds as PyTorch's two kernels do (SiLU in float,
// rounded to bf16; the product of the two bf16 values in float, rounded), so the result is
// byte-identical where the same expf is used.
//   silu_mul      the fusion
//   silu_mul_bad  a wrong one: the product without the SiLU (m = g * u)
//   stash_bf16    a copy: in the eager program PyTorch frees g once silu has read it and the
//                 up GEMM writes u into the same block, so a replacement that needs g and u at
//                 once first keeps g elsewhere (where t would have gone: t is never written)
// Built as a cubin (nvcc -cubin); launched by `kerncap window validate --replace` from a
// launches.json that window_apps/silu_mul_launches.py writes from the capture.
#include <cuda_bf16.h>

extern "C" __global__ void silu_mul(const __nv_bfloat16* g, const __nv_bfloat16* u, __nv_bfloat16* m, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float x = __bfloat162float(g[i]);
    const __nv_bfloat16 t = __float2bfloat16(x / (1.0f + expf(-x)));
    m[i] = __float2bfloat16(__bfloat162float(t) * __bfloat162float(u[i]));
  }
}

extern "C" __global__ void silu_mul_bad(const __nv_bfloat16* g, const __nv_bfloat16* u, __nv_bfloat16* m,
                                        long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    m[i] = __float2bfloat16(__bfloat162float(g[i]) * __bfloat162float(u[i]));
}

extern "C" __global__ void stash_bf16(const __nv_bfloat16* src, __nv_bfloat16* dst, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}
