#pragma once
// What the device patch does with one access, written once for two compilers: nvcc builds
// it into patch.cu, and the host unit tests run the very same code on host memory (addresses
// are then host pointers), so straddling, partial-word and read-before-written rules are
// tested without a GPU.
#include <stdint.h>

#include "footprint/device_abi.h"

#ifdef __CUDACC__
#define KC_FP_FN static __device__ __forceinline__
#define KC_FP_LOAD32(p) (*reinterpret_cast<const volatile uint32_t*>(p))
#define KC_FP_OR32(p, m) atomicOr((p), (m))
#define KC_FP_ADD64(p, v) atomicAdd((p), (v))
#else
#define KC_FP_FN static inline
#define KC_FP_LOAD32(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define KC_FP_OR32(p, m) __atomic_fetch_or((p), (m), __ATOMIC_RELAXED)
#define KC_FP_ADD64(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#endif

// The sanitizer's access flags (Sanitizer_DeviceMemoryFlags; patch.cu checks they agree).
#define KC_FP_SAN_READ 0x1u
#define KC_FP_SAN_WRITE 0x2u
#define KC_FP_SAN_PREFETCH 0x8u

// Our kind (KC_FP_READ/WRITE/ATOMIC) of an access; 0 for one to ignore. An atomic reads the
// old value and writes the new one: the sanitizer reports it as a write without a new value
// (`has_data` false), or with both flags.
KC_FP_FN uint32_t kc_fp_kind(uint32_t flags, bool has_data) {
  if (flags & KC_FP_SAN_PREFETCH) return 0;
  const bool write = flags & KC_FP_SAN_WRITE;
  const bool atomic = write && (!has_data || (flags & KC_FP_SAN_READ));
  const bool read = (flags & KC_FP_SAN_READ) || atomic;
  return (read ? KC_FP_READ : 0u) | (write ? KC_FP_WRITE : 0u) | (atomic ? KC_FP_ATOMIC : 0u);
}

// Sets bits [first, last] (inclusive), skipping the atomic where they are all set already:
// most accesses repeat what a neighbouring thread just marked.
KC_FP_FN void kc_fp_set_bits(uint32_t* bm, uint64_t first, uint64_t last) {
  while (first <= last) {
    const uint64_t w = first >> 5;
    const uint32_t lo = first & 31;
    const uint32_t hi = (last >> 5) == w ? (last & 31) : 31;
    const uint32_t upto = hi == 31 ? 0xffffffffu : ((1u << (hi + 1)) - 1);
    const uint32_t mask = upto & ~((1u << lo) - 1);
    if ((KC_FP_LOAD32(bm + w) & mask) != mask) KC_FP_OR32(bm + w, mask);
    first = (w + 1) << 5;
  }
}

// Region-relative bytes [off, end) were loaded: mark their 4-byte granules, and as
// read-before-written those where some loaded byte has not been stored yet.
KC_FP_FN void kc_fp_mark_read(const kc_fp_region* r, uint32_t* words, uint64_t off, uint64_t end) {
  const uint32_t* written = words + r->written_words;
  for (uint64_t g = off >> 2; g <= (end - 1) >> 2; ++g) {
    const uint64_t lo = off > g * 4 ? off : g * 4;
    const uint64_t hi = end < g * 4 + 4 ? end : g * 4 + 4;
    // A 4-byte granule's byte bits lie in one 32-bit word of `written`.
    const uint32_t mask = ((1u << (hi - lo)) - 1) << (lo & 31);
    if ((KC_FP_LOAD32(written + (lo >> 5)) & mask) != mask) kc_fp_set_bits(words + r->rbw_words, g, g);
  }
  kc_fp_set_bits(words + r->read_words, off >> 2, (end - 1) >> 2);
}

KC_FP_FN void kc_fp_add_escape(kc_fp_table* t, uint64_t address, uint64_t pc, uint32_t size, uint32_t kind) {
  const unsigned long long i = KC_FP_ADD64(&t->escape_count, 1ull);
  if (i >= t->escape_capacity) return;
  kc_fp_escape* e = reinterpret_cast<kc_fp_escape*>(t->escapes) + i;
  e->address = address;
  e->pc = pc;
  e->size = size;
  e->flags = kind;
}

// One access of `size` bytes at `a`: marks every region it overlaps (the table is sorted
// by base, regions do not overlap) and records an escape for any byte outside them all.
KC_FP_FN void kc_fp_record(kc_fp_table* t, uint64_t pc, uint64_t a, uint32_t size, uint32_t kind) {
  const kc_fp_region* regions = reinterpret_cast<const kc_fp_region*>(t->regions);
  uint32_t* words = reinterpret_cast<uint32_t*>(t->bitmaps);
  const uint64_t a_end = a + size;
  uint32_t lo = 0, hi = t->region_count;  // -> the first region with base > a
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (regions[mid].base <= a) lo = mid + 1;
    else hi = mid;
  }
  uint64_t covered = 0;
  for (uint32_t i = lo > 0 ? lo - 1 : 0; i < t->region_count && regions[i].base < a_end; ++i) {
    const kc_fp_region* r = regions + i;
    const uint64_t s = a > r->base ? a : r->base;
    const uint64_t e = a_end < r->base + r->size ? a_end : r->base + r->size;
    if (s >= e) continue;
    covered += e - s;
    if (kind & KC_FP_READ) kc_fp_mark_read(r, words, s - r->base, e - r->base);
    if (kind & KC_FP_WRITE) kc_fp_set_bits(words + r->written_words, s - r->base, e - r->base - 1);
  }
  if (covered < size) kc_fp_add_escape(t, a, pc, size, kind);
}
