// The device side of `kerncap footprint`: a Compute Sanitizer tools patch called before
// every global load, store and atomic of the replayed kernel. It aggregates on the device
// (bitmaps per captured region) instead of logging each access, so big kernels cost memory
// proportional to their regions, not to their access count.
//
// Built with `nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch` and
// embedded into kerncap; the host passes the kc_fp_table address as userdata (null when
// the kernel runs uninstrumented-by-intent: the patch then returns at once).
#include <sanitizer_patching.h>

#include "footprint/device_abi.h"

namespace {

__device__ __forceinline__ uint32_t load_word(const uint32_t* p) { return *reinterpret_cast<const volatile uint32_t*>(p); }

// Sets bits [first, last] (inclusive), skipping the atomic where they are all set already:
// most accesses repeat what a neighbour thread just marked.
__device__ __forceinline__ void set_bits(uint32_t* bm, uint64_t first, uint64_t last) {
  while (first <= last) {
    const uint64_t w = first >> 5;
    const uint32_t lo = first & 31;
    const uint32_t hi = (last >> 5) == w ? (last & 31) : 31;
    const uint32_t upto = hi == 31 ? 0xffffffffu : ((1u << (hi + 1)) - 1);
    const uint32_t mask = upto & ~((1u << lo) - 1);
    if ((load_word(bm + w) & mask) != mask) atomicOr(bm + w, mask);
    first = (w + 1) << 5;
  }
}

// Region-relative bytes [off, end) were loaded: mark the 4-byte granules, and those where
// some loaded byte has not been stored yet as read-before-written.
__device__ __forceinline__ void mark_read(const kc_fp_region& r, uint32_t* words, uint64_t off, uint64_t end) {
  uint32_t* read = words + r.read_words;
  const uint32_t* written = words + r.written_words;
  uint32_t* rbw = words + r.rbw_words;
  for (uint64_t g = off >> 2; g <= (end - 1) >> 2; ++g) {
    const uint64_t lo = off > g * 4 ? off : g * 4;
    const uint64_t hi = end < g * 4 + 4 ? end : g * 4 + 4;
    // A 4-byte granule's byte bits lie in one 32-bit word of `written`.
    const uint32_t mask = ((1u << (hi - lo)) - 1) << (lo & 31);
    if ((load_word(written + (lo >> 5)) & mask) != mask) set_bits(rbw, g, g);
  }
  set_bits(read, off >> 2, (end - 1) >> 2);
}

__device__ __forceinline__ void escape(kc_fp_table* t, uint64_t address, uint64_t pc, uint32_t size, uint32_t flags) {
  const unsigned long long i = atomicAdd(&t->escape_count, 1ull);
  if (i >= t->escape_capacity) return;
  kc_fp_escape* e = reinterpret_cast<kc_fp_escape*>(t->escapes) + i;
  e->address = address;
  e->pc = pc;
  e->size = size;
  e->flags = flags;
}

__device__ __forceinline__ void count_access(kc_fp_table* t) {
  const uint32_t active = __activemask();
  uint32_t lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane == static_cast<uint32_t>(__ffs(active) - 1)) atomicAdd(&t->accesses, static_cast<unsigned long long>(__popc(active)));
}

}  // namespace

extern "C" __device__ __noinline__ SanitizerPatchResult kerncap_footprint_access(void* userdata, uint64_t pc, void* ptr,
                                                                                uint32_t accessSize, uint32_t flags,
                                                                                const void* pData) {
  if (!userdata || accessSize == 0 || (flags & SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH)) return SANITIZER_PATCH_SUCCESS;
  if (__isShared(ptr) || __isLocal(ptr)) return SANITIZER_PATCH_SUCCESS;  // not a captured region's memory
  kc_fp_table* t = static_cast<kc_fp_table*>(userdata);
  count_access(t);

  // An atomic reads the old value and writes the new one; the sanitizer reports it as a
  // write with no new value (pData null), or with both flags.
  const bool is_write = flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE;
  const bool atomic = is_write && (pData == nullptr || (flags & SANITIZER_MEMORY_DEVICE_FLAG_READ));
  const bool is_read = (flags & SANITIZER_MEMORY_DEVICE_FLAG_READ) || atomic;
  const uint32_t kind = (is_read ? KC_FP_READ : 0u) | (is_write ? KC_FP_WRITE : 0u) | (atomic ? KC_FP_ATOMIC : 0u);

  const uint64_t a = reinterpret_cast<uint64_t>(ptr);
  const uint64_t a_end = a + accessSize;
  const kc_fp_region* regions = reinterpret_cast<const kc_fp_region*>(t->regions);
  uint32_t* words = reinterpret_cast<uint32_t*>(t->bitmaps);

  // The last region whose base is <= a; an access may also run on into the next ones.
  uint32_t lo = 0, hi = t->region_count;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (regions[mid].base <= a) lo = mid + 1;
    else hi = mid;
  }
  uint64_t covered = 0;
  for (uint32_t i = lo > 0 ? lo - 1 : 0; i < t->region_count && regions[i].base < a_end; ++i) {
    const kc_fp_region& r = regions[i];
    const uint64_t s = a > r.base ? a : r.base;
    const uint64_t e = a_end < r.base + r.size ? a_end : r.base + r.size;
    if (s >= e) continue;
    covered += e - s;
    const uint64_t off = s - r.base, end = e - r.base;
    if (is_read) mark_read(r, words, off, end);
    if (is_write) set_bits(words + r.written_words, off, end - 1);
  }
  if (covered < accessSize) escape(t, a, pc, accessSize, kind);
  return SANITIZER_PATCH_SUCCESS;
}
