// The device side of `kerncap footprint`: a Compute Sanitizer tools patch called before
// every global load, store and atomic of the replayed kernel. It aggregates on the device
// (bitmaps per captured region, marking.h) instead of logging each access, so big kernels
// cost memory in proportion to their regions, not to their access count.
//
// Built with `nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch` and
// embedded into kerncap; the host passes the kc_fp_table address as userdata (null for
// launches meant to run as if uninstrumented: the patch then returns at once).
#include <sanitizer_patching.h>

#include "footprint/marking.h"

static_assert(KC_FP_SAN_READ == SANITIZER_MEMORY_DEVICE_FLAG_READ, "sanitizer flags changed");
static_assert(KC_FP_SAN_WRITE == SANITIZER_MEMORY_DEVICE_FLAG_WRITE, "sanitizer flags changed");
static_assert(KC_FP_SAN_PREFETCH == SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH, "sanitizer flags changed");

// Counts accesses once per group of converged threads, not once per thread.
static __device__ __forceinline__ void count_access(kc_fp_table* t) {
  const uint32_t active = __activemask();
  uint32_t lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane == static_cast<uint32_t>(__ffs(active) - 1))
    atomicAdd(&t->accesses, static_cast<unsigned long long>(__popc(active)));
}

extern "C" __device__ __noinline__ SanitizerPatchResult kerncap_footprint_access(void* userdata, uint64_t pc, void* ptr,
                                                                                uint32_t accessSize, uint32_t flags,
                                                                                const void* pData) {
  if (!userdata || accessSize == 0) return SANITIZER_PATCH_SUCCESS;
  if (__isShared(ptr) || __isLocal(ptr)) return SANITIZER_PATCH_SUCCESS;  // never a captured region
  const uint32_t kind = kc_fp_kind(flags, pData != nullptr);
  if (!kind) return SANITIZER_PATCH_SUCCESS;
  kc_fp_table* t = static_cast<kc_fp_table*>(userdata);
  count_access(t);
  kc_fp_record(t, pc, reinterpret_cast<uint64_t>(ptr), accessSize, kind);
  return SANITIZER_PATCH_SUCCESS;
}
