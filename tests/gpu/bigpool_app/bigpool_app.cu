// The big-pool suite's application (tests/gpu/bigpool_e2e.sh): like a framework that
// preallocates most of the GPU (XLA's pool), it allocates one buffer of BIGPOOL_GIB GiB
// (default 32), all zeros, and launches one kernel that writes 16 MiB in the middle of it
// from the 4 MiB of input before them. The capture stores a few MiB; validating it must cost
// seconds, whatever the pool's size.
//
// Built twice by the suite: as the application, and with -DSTRAY as a variant cubin whose
// kernel also writes one byte far into the zeros (a stray write the comparison must report
// at its exact offset).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

// The input (4 MiB of floats, read only) lies right before the output (16 MiB of floats,
// written only), halfway into the pool: the kernel's C++ signature types each pointer's
// bytes up to the next pointer, so `--fuzz` randomises exactly the 4 MiB of input.
constexpr uint64_t kInputBytes = 4ull << 20;
constexpr uint64_t kOutBytes = 16ull << 20;

// out[i] = f(in[i % n_in], i) over 16 MiB of floats; never zero, so every written byte
// differs from the pool's zeros. With STRAY, one more byte at pool + stray.
__global__ void bigpool_write(const float* in, uint64_t n_in, float* out, uint64_t n_out, unsigned char* pool,
                              uint64_t stray) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n_out) out[i] = in[i % n_in] * 0.5f + static_cast<float>(i % 1000) + 1.0f;
#ifdef STRAY
  if (i == 0) pool[stray] = 0x5A;
#else
  (void)pool;
  (void)stray;
#endif
}

__global__ void bigpool_fill_input(float* in, uint64_t n) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) in[i] = static_cast<float>(i % 97) * 0.25f;
}

int main() {
  const char* env = std::getenv("BIGPOOL_GIB");
  const uint64_t gib = env ? std::strtoull(env, nullptr, 10) : 32;
  const uint64_t bytes = gib << 30;
  unsigned char* pool = nullptr;
  CHECK(cudaMalloc(&pool, bytes));
  CHECK(cudaMemset(pool, 0, bytes));
  auto* out = reinterpret_cast<float*>(pool + bytes / 2);
  auto* in = reinterpret_cast<float*>(pool + bytes / 2 - kInputBytes);
  const uint64_t n_in = kInputBytes / 4, n_out = kOutBytes / 4;
  bigpool_fill_input<<<static_cast<unsigned>((n_in + 255) / 256), 256>>>(in, n_in);
  // The stray byte (variant only) three quarters in, the top byte of a float: as an fp32
  // element (fuzzing compares the output as fp32) 0x5A000000 is far out of any tolerance.
  const uint64_t stray = bytes / 4 * 3 + 12347;
  bigpool_write<<<static_cast<unsigned>((n_out + 255) / 256), 256>>>(in, n_in, out, n_out, pool, stray);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::printf("bigpool: %llu GiB pool, 16 MiB written at +%llu, stray offset of the variant %llu\n",
              static_cast<unsigned long long>(gib), static_cast<unsigned long long>(bytes / 2),
              static_cast<unsigned long long>(stray));
  CHECK(cudaFree(pool));
  return 0;
}
