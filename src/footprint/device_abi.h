#pragma once
// The memory layout shared by the host side of `kerncap footprint` and its device patch
// (patch.cu, compiled by nvcc as a Compute Sanitizer tools patch). Plain C, fixed-width
// fields only: both compilers must lay it out identically. Everything here lives in device
// memory the host allocates; the patch receives the table's address as its userdata.
#include <stdint.h>

// Bump when a field changes; host and patch are built together, the constant guards mixing.
#define KC_FP_ABI_VERSION 1u

// One captured region, at its replay address. The table is sorted by base and regions do
// not overlap. Bitmap offsets count 32-bit words from kc_fp_table.bitmaps.
struct kc_fp_region {
  uint64_t base;
  uint64_t size;
  uint64_t read_words;     // 1 bit per 4-byte granule: loaded
  uint64_t written_words;  // 1 bit per byte: stored
  uint64_t rbw_words;      // 1 bit per 4-byte granule: loaded while not all its loaded bytes were stored
};

// Flags of an escape record (our own, normalized from the sanitizer's).
#define KC_FP_READ 1u
#define KC_FP_WRITE 2u
#define KC_FP_ATOMIC 4u

struct kc_fp_escape {
  uint64_t address;
  uint64_t pc;
  uint32_t size;
  uint32_t flags;
};

struct kc_fp_table {
  uint32_t abi_version;
  uint32_t region_count;
  uint64_t regions;   // device address of kc_fp_region[region_count]
  uint64_t bitmaps;   // device address of uint32_t words
  uint64_t escapes;   // device address of kc_fp_escape[escape_capacity]
  uint64_t escape_capacity;
  unsigned long long escape_count;  // every escape, also those past the capacity
  unsigned long long accesses;      // global accesses seen (warp-aggregated)
};
