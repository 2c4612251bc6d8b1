#pragma once
// Shared by the example applications: one checking macro for every CUDA call and a
// deterministic checksum line, so the output of a run with kerncap attached can be diffed
// against a run without it (tests/gpu/run.sh greps the "checksum" lines).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(call)                                                                               \
  do {                                                                                         \
    cudaError_t err_ = (call);                                                                 \
    if (err_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                \
                   cudaGetErrorString(err_));                                                  \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

// After a <<<...>>> launch: launch errors are reported by cudaGetLastError.
#define CK_LAUNCH() CK(cudaGetLastError())

// FNV-1a over raw bytes: exact, so any changed bit shows.
inline uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

inline void print_checksum(const char* what, uint64_t h) {
  std::printf("checksum %s %016llx\n", what, static_cast<unsigned long long>(h));
}

// A host-side check the example asserts on its own results (exit 1 when wrong).
inline void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "self-check failed: %s\n", what);
    std::exit(1);
  }
}
