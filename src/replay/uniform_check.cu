// The comparison's device check (compiled by nvcc into an embedded fatbin, loaded by the
// replay engine when a comparison first needs it): for every block of a piece of a region,
// the one value all its bytes hold, or 0x100 when they differ. Blocks are numbered as
// replay/compare_plan.hpp's CompareGrid numbers them: windows of `step` bytes from the
// piece's start, each cut into blocks of `block` bytes from the window's start.
//
// One warp per block, grid-stride over blocks: 16-byte loads (after at most 15 bytes to reach
// 16-byte alignment: a piece may start at any byte), several in flight per lane, and one
// vote. It reads memory at the device's speed, so comparing a 100 GiB pool of zeros costs
// tens of milliseconds instead of reading it back through PCIe.
//
// kerncap_equal, the same walk over two pieces: for every block, whether the replay's bytes
// equal the expected bytes' copy the session keeps on the device (0) or not (0x100). The
// copy is placed at the same address modulo 16 as the region, so both take 16-byte loads.
#include <cstdint>

namespace {

constexpr unsigned kThreads = 256;

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads)
    kerncap_uniform(const unsigned char* base, unsigned long long len, unsigned long long step, unsigned block,
                    unsigned long long first, unsigned long long count, unsigned* out) {
  constexpr unsigned kWarps = kThreads / 32;
  constexpr unsigned kUnroll = 4;
  const unsigned lane = threadIdx.x % 32;
  const uint64_t per_window = (step + block - 1) / block;
  for (uint64_t j = uint64_t{blockIdx.x} * kWarps + threadIdx.x / 32; j < count; j += uint64_t{gridDim.x} * kWarps) {
    const uint64_t c = first + j;
    const uint64_t w = c / per_window, k = c % per_window;
    const uint64_t off = w * step + k * block;
    const uint64_t window_end = len < (w + 1) * step ? len : (w + 1) * step;
    const uint64_t n = window_end - off < block ? window_end - off : block;
    const unsigned char* p = base + off;
    const unsigned char v = p[0];
    const uint64_t rep = uint64_t{v} * 0x0101010101010101ull;
    uint64_t diff = 0;
    const uint64_t misalign = reinterpret_cast<uintptr_t>(p) % 16;
    const uint64_t head = misalign ? (16 - misalign < n ? 16 - misalign : n) : 0;
    if (lane < head) diff |= p[lane] ^ v;
    const uint64_t body = (n - head) / 16;
    const auto* q = reinterpret_cast<const ulonglong2*>(p + head);
    uint64_t i = lane;
    for (; i + 32 * (kUnroll - 1) < body; i += 32 * kUnroll) {
      ulonglong2 x[kUnroll];
#pragma unroll
      for (unsigned u = 0; u < kUnroll; ++u) x[u] = q[i + 32 * u];
#pragma unroll
      for (unsigned u = 0; u < kUnroll; ++u) diff |= (x[u].x ^ rep) | (x[u].y ^ rep);
    }
    for (; i < body; i += 32) {
      const ulonglong2 x = q[i];
      diff |= (x.x ^ rep) | (x.y ^ rep);
    }
    const uint64_t tail = head + body * 16;  // fewer than 16 bytes left
    if (tail + lane < n) diff |= p[tail + lane] ^ v;
    const bool mixed = __any_sync(0xffffffffu, diff != 0);
    if (lane == 0) out[j] = mixed ? 0x100u : v;
  }
}

extern "C" __global__ void __launch_bounds__(kThreads)
    kerncap_equal(const unsigned char* base, const unsigned char* expected, unsigned long long len,
                  unsigned long long step, unsigned block, unsigned long long first, unsigned long long count,
                  unsigned* out) {
  constexpr unsigned kWarps = kThreads / 32;
  constexpr unsigned kUnroll = 4;
  const unsigned lane = threadIdx.x % 32;
  const uint64_t per_window = (step + block - 1) / block;
  for (uint64_t j = uint64_t{blockIdx.x} * kWarps + threadIdx.x / 32; j < count; j += uint64_t{gridDim.x} * kWarps) {
    const uint64_t c = first + j;
    const uint64_t w = c / per_window, k = c % per_window;
    const uint64_t off = w * step + k * block;
    const uint64_t window_end = len < (w + 1) * step ? len : (w + 1) * step;
    const uint64_t n = window_end - off < block ? window_end - off : block;
    const unsigned char* p = base + off;
    const unsigned char* e = expected + off;
    uint64_t diff = 0;
    const uint64_t misalign = reinterpret_cast<uintptr_t>(p) % 16;
    if (misalign != reinterpret_cast<uintptr_t>(e) % 16) {
      // Never with the session's placement; byte by byte rather than wrong.
      for (uint64_t i = lane; i < n; i += 32) diff |= p[i] ^ e[i];
    } else {
      const uint64_t head = misalign ? (16 - misalign < n ? 16 - misalign : n) : 0;
      if (lane < head) diff |= p[lane] ^ e[lane];
      const uint64_t body = (n - head) / 16;
      const auto* q = reinterpret_cast<const ulonglong2*>(p + head);
      const auto* r = reinterpret_cast<const ulonglong2*>(e + head);
      uint64_t i = lane;
      for (; i + 32 * (kUnroll - 1) < body; i += 32 * kUnroll) {
        ulonglong2 x[kUnroll], y[kUnroll];
#pragma unroll
        for (unsigned u = 0; u < kUnroll; ++u) {
          x[u] = q[i + 32 * u];
          y[u] = r[i + 32 * u];
        }
#pragma unroll
        for (unsigned u = 0; u < kUnroll; ++u) diff |= (x[u].x ^ y[u].x) | (x[u].y ^ y[u].y);
      }
      for (; i < body; i += 32) {
        const ulonglong2 x = q[i], y = r[i];
        diff |= (x.x ^ y.x) | (x.y ^ y.y);
      }
      const uint64_t tail = head + body * 16;  // fewer than 16 bytes left
      if (tail + lane < n) diff |= p[tail + lane] ^ e[tail + lane];
    }
    const bool differs = __any_sync(0xffffffffu, diff != 0);
    if (lane == 0) out[j] = differs ? 0x100u : 0u;
  }
}
