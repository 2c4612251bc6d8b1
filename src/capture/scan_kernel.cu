// The snapshot's device-side scan (compiled by nvcc into an embedded fatbin, loaded into the
// application's context at the target launch only). For every chunk of a region it writes
// the chunk's signature: 0 when every byte is zero, else a 64-bit hash with its low bit set.
// BEFORE copies only chunks whose signature is not 0; AFTER copies only chunks whose
// signature changed, so neither reads unchanged or zero memory through PCIe.
//
// The hash: each 8-byte word is mixed with its index in the chunk (a splitmix64 finaliser)
// and the mixes are summed; a change to any word changes its term, and two changes cancel
// with probability about 2^-64. It only has to tell "changed" from "unchanged" for one
// launch, not resist an adversary.
#include <cstdint>

namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

// base: 8-byte aligned; bytes: the region's size (any); chunk: bytes per chunk, a multiple
// of 8; out[chunk index] = signature for the `chunks` chunks of [base, base + bytes).
// One warp per chunk, grid-stride over chunks: the default 4 KiB chunk is 512 words, so a
// block per chunk spent most of its time being scheduled and reducing across warps; a warp
// reduces with shuffles alone, and four independent loads per lane keep enough bytes in
// flight to read at memory speed.
extern "C" __global__ void __launch_bounds__(kThreads)
    kerncap_scan(const unsigned char* base, unsigned long long bytes, unsigned chunk, unsigned long long* out,
                 unsigned long long chunks) {
  constexpr unsigned kWarps = kThreads / 32;
  constexpr unsigned kUnroll = 4;
  const unsigned lane = threadIdx.x % 32;
  for (uint64_t c = uint64_t{blockIdx.x} * kWarps + threadIdx.x / 32; c < chunks;
       c += uint64_t{gridDim.x} * kWarps) {
    const uint64_t first = c * chunk;
    const uint64_t len = bytes - first < chunk ? bytes - first : chunk;
    const uint64_t words = len / 8;
    const auto* w = reinterpret_cast<const uint64_t*>(base + first);
    uint64_t sum = 0, any = 0;
    uint64_t i = lane;
    for (; i + 32 * (kUnroll - 1) < words; i += 32 * kUnroll) {
      uint64_t v[kUnroll];
#pragma unroll
      for (unsigned u = 0; u < kUnroll; ++u) v[u] = w[i + 32 * u];
#pragma unroll
      for (unsigned u = 0; u < kUnroll; ++u) {
        any |= v[u];
        sum += mix(v[u] ^ ((i + 32 * u) * 0x9e3779b97f4a7c15ull));
      }
    }
    for (; i < words; i += 32) {
      const uint64_t v = w[i];
      any |= v;
      sum += mix(v ^ (i * 0x9e3779b97f4a7c15ull));
    }
    // The region's last chunk's tail of fewer than 8 bytes, as one more word.
    if (lane == 0 && len % 8) {
      uint64_t v = 0;
      for (uint64_t b = words * 8; b < len; ++b) v |= uint64_t{base[first + b]} << (8 * (b - words * 8));
      any |= v;
      sum += mix(v ^ (words * 0x9e3779b97f4a7c15ull));
    }
    for (int o = 16; o; o >>= 1) {
      sum += __shfl_xor_sync(0xffffffffu, sum, o);
      any |= __shfl_xor_sync(0xffffffffu, any, o);
    }
    if (lane == 0) out[c] = any ? (mix(sum + len) | 1) : 0;
  }
}

// The reachable closure: marks hit[k] for every region k (sorted, apart: lo[k] <= addr <
// hi[k]) that an 8-byte word of [base, base + bytes) points into. Grid-stride; a word that
// is no address of a tracked region costs two compares.
extern "C" __global__ void __launch_bounds__(kThreads)
    kerncap_reach(const unsigned char* base, unsigned long long bytes, const unsigned long long* lo,
                  const unsigned long long* hi, unsigned n, unsigned* hit) {
  const uint64_t words = bytes / 8;
  const auto* w = reinterpret_cast<const uint64_t*>(base);
  const uint64_t first = lo[0], last = hi[n - 1];
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words; i += uint64_t{gridDim.x} * blockDim.x) {
    const uint64_t v = w[i];
    if (v < first || v >= last) continue;
    unsigned a = 0, b = n;  // the last region with lo <= v
    while (b - a > 1) {
      const unsigned m = (a + b) / 2;
      if (lo[m] <= v) a = m; else b = m;
    }
    if (v < hi[a] && !hit[a]) hit[a] = 1;
  }
}
