// Candidates for fault_app's fm_step (tests/gpu/soak.py): the same signature, compiled to a
// cubin with -DKIND=0 correct (the same code), 1 wrong (+1 everywhere), 2 nan (one NaN),
// 3 fault (an illegal address).
#include <cstdint>

__device__ __forceinline__ uint32_t mix(uint64_t i, uint32_t seed) {  // as fault_app.cu's
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) ^ seed * 0x9e3779b9u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  return h;
}

#ifndef KIND
#define KIND 0
#endif

__global__ void fm_step(const float* w, float* y, uint64_t nw, uint64_t ny, uint32_t seed, int trap) {
  const uint64_t first = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (trap && first == 0) *reinterpret_cast<volatile float*>(uintptr_t{8}) = 1.f;
#if KIND == 3
  if (first == 0) *reinterpret_cast<volatile float*>(uintptr_t{8}) = 1.f;
#endif
  for (uint64_t i = first; i < ny; i += uint64_t{gridDim.x} * blockDim.x) {
    float v = 0.5f * y[i] + w[i % nw] * 0.25f + static_cast<float>(mix(i, seed) & 1023u) * (1.f / 1024);
#if KIND == 1
    v += 1.f;
#elif KIND == 2
    if (i == 77) v = __int_as_float(0x7fc00000);
#endif
    y[i] = v;
  }
}
