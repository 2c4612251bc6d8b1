// The fault matrix's application (tests/gpu/fault_matrix.sh, issue 38): three launches of
// fm_step (dispatch 0, 1, 2) over W (BEFORE_MIB of noise: incompressible BEFORE memory) and Y
// (AFTER_MIB, zero until dispatch 0 writes noise into all of it: incompressible AFTER memory),
// and a fault of the chosen kind before or after dispatch 1:
//
//   fault_app MODE [BEFORE_MIB=8] [AFTER_MIB=1] [SEED=1]
//
// (SEED: W's noise; two captures with different seeds share no chunk.)
// MODE: ok | abort_before | segv_before | gpufault_before (another kernel's illegal address
// before dispatch 1; the application then goes on launching, as a careless one would) |
// abort_after | segv_after | gpufault_after (the same after dispatch 1 has run) |
// fault_in_target (dispatch 1 itself writes to an illegal address) |
// hog MIB (no launches: takes device memory until MIB are left free, prints "hog ready
// FREE_MIB", then sleeps until killed).
// The candidates of the soak (fault_apps/candidate.cu) define fm_step with this signature.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <unistd.h>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "fault_app: %s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

__device__ __forceinline__ uint32_t mix(uint64_t i, uint32_t seed) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) ^ seed * 0x9e3779b9u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  return h;
}

__global__ void fm_noise(uint32_t* p, uint64_t n, uint32_t seed) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n; i += uint64_t{gridDim.x} * blockDim.x)
    p[i] = mix(i, seed) & 0x3f7fffffu;  // finite floats in [0, 1)
}

// The target: y[i] = 0.5 * y[i] + w[i mod nw] * 0.25 + noise(i, seed) (so Y does not repeat with
// W's period: AFTER is as large as Y); with trap, an illegal write first.
__global__ void fm_step(const float* w, float* y, uint64_t nw, uint64_t ny, uint32_t seed, int trap) {
  const uint64_t first = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (trap && first == 0) *reinterpret_cast<volatile float*>(uintptr_t{8}) = 1.f;
  for (uint64_t i = first; i < ny; i += uint64_t{gridDim.x} * blockDim.x)
    y[i] = 0.5f * y[i] + w[i % nw] * 0.25f + static_cast<float>(mix(i, seed) & 1023u) * (1.f / 1024);
}

__global__ void fm_bad(float* p) { *reinterpret_cast<volatile float*>(p) = 2.f; }

static int hog(size_t leave_mib) {
  std::vector<void*> held;
  for (size_t chunk = size_t{8} << 30; chunk >= (size_t{64} << 20);) {
    size_t free_b = 0, total = 0;
    CK(cudaMemGetInfo(&free_b, &total));
    if (free_b <= (leave_mib << 20) + chunk) {
      chunk /= 2;
      continue;
    }
    void* p = nullptr;
    if (cudaMalloc(&p, chunk) != cudaSuccess) {
      cudaGetLastError();
      chunk /= 2;
      continue;
    }
    held.push_back(p);
  }
  size_t free_b = 0, total = 0;
  CK(cudaMemGetInfo(&free_b, &total));
  std::printf("hog ready %zu\n", free_b >> 20);
  std::fflush(stdout);
  for (;;) pause();
}

static void crash(const char* how) {
  std::fprintf(stderr, "fault_app: crashing now (%s)\n", how);
  std::fflush(stderr);
  if (!std::strcmp(how, "abort")) std::abort();
  if (!std::strcmp(how, "segv")) *reinterpret_cast<volatile int*>(uintptr_t{16}) = 1;
  if (!std::strcmp(how, "gpufault")) {
    fm_bad<<<1, 1>>>(reinterpret_cast<float*>(uintptr_t{8}));
    const cudaError_t e = cudaDeviceSynchronize();
    std::fprintf(stderr, "fault_app: after the other kernel's fault: %s\n", cudaGetErrorString(e));
  }
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "ok";
  if (!std::strcmp(mode, "hog")) return hog(argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024);
  const uint64_t before_mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 8;
  const uint64_t after_mib = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1;
  const uint64_t nw = before_mib << 18, ny = after_mib << 18;  // floats
  float *w = nullptr, *y = nullptr;
  CK(cudaMalloc(&w, nw * 4));
  CK(cudaMalloc(&y, ny * 4));
  const uint32_t seed = argc > 4 ? static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10)) : 1;
  fm_noise<<<1024, 256>>>(reinterpret_cast<uint32_t*>(w), nw, seed);
  CK(cudaMemset(y, 0, ny * 4));
  CK(cudaDeviceSynchronize());
  const size_t len = std::strlen(mode);
  const bool after = len > 6 && !std::strcmp(mode + len - 6, "_after");
  const bool before = len > 7 && !std::strcmp(mode + len - 7, "_before");
  const std::string how(mode, before ? len - 7 : after ? len - 6 : len);
  for (uint32_t d = 0; d < 3; ++d) {
    if (d == 1 && before) crash(how.c_str());
    const int trap = d == 1 && !std::strcmp(mode, "fault_in_target");
    fm_step<<<1024, 256>>>(w, y, nw, ny, d, trap);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      std::fprintf(stderr, "fault_app: dispatch %u: %s\n", d, cudaGetErrorString(e));
      if (!before) return 1;  // a careless application goes on after another kernel's fault
    }
    if (d == 1 && after) crash(how.c_str());
  }
  float h[2] = {};
  CK(cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost));
  std::printf("fault_app %s: y[0..1] = %g %g\n", mode, h[0], h[1]);
  return 0;
}
