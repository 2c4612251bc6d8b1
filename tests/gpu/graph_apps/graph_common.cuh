// Shared by the graph test programs (tests/gpu/graph_e2e.sh): error checks and a checksum
// line per step, printed as "APP <what> <hex>" so a run under kerncap can be compared.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(e_), __FILE__, __LINE__, #call); \
      std::exit(3);                                                                              \
    }                                                                                            \
  } while (0)

inline uint64_t fnv1a(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Prints the checksum of `n` floats of device memory.
inline void print_device(const char* what, int step, const float* d, int n) {
  std::vector<float> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("APP %s %d %016llx\n", what, step, static_cast<unsigned long long>(fnv1a(h.data(), n * sizeof(float))));
  std::fflush(stdout);
}
