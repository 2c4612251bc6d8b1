#pragma once
// Shadow checking (`kerncap run --shadow`, docs/swap.md): at a checked launch of a kernel, at
// its API entry, the variant runs first on the side — on a stream of ours, after the regions
// the launch can reach were saved — its results are kept and the regions put back; then the
// application's own launch runs as it was made, and at its API exit the original's results
// (expected) are compared with the variant's (actual) by the judge's comparator, each region
// within the default tolerance of its element type (from the kernel's signature). The
// application keeps its own kernel's results throughout.
//
// The regions are the allocations the launch's parameter words point into (the driver names
// an address's allocation): pointers stored in memory are not followed, and the variant must
// not write outside those allocations. Other threads of the application that run GPU work
// during a check can see the variant's transient results.
#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capture/launch_info.hpp"
#include "compare/compare.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

struct ShadowRegion {
  uint64_t base = 0, size = 0;
  int param = -1;                                 // the first parameter pointing into it
  compare::DType dtype = compare::DType::Bytes;  // that parameter's element type
};

class ShadowDriver {
 public:
  virtual ~ShadowDriver() = default;
  // The allocation holding a device address (base, size), or nothing (not device memory).
  virtual std::optional<std::pair<uint64_t, uint64_t>> allocation_of(uint64_t address) = 0;
  // Synchronise; save `regions`; launch `variant` as `launch` was made, on a stream of ours;
  // synchronise; keep the regions' bytes; put the saved bytes back. False with `why` when any
  // step fails (the regions are put back when the variant ran).
  virtual bool run_variant(CUfunction variant, const LaunchArgs& launch, const std::vector<ShadowRegion>& regions,
                           std::string* why) = 0;
  // After the application's launch: synchronise (false and `why` on an error).
  virtual bool finish_original(std::string* why) = 0;
  // `n` bytes at `offset` of region `i`: what the original left there (expected) and what the
  // variant did (actual). False when they cannot be read.
  virtual bool read(size_t i, uint64_t offset, uint64_t n, uint8_t* expected, uint8_t* actual) = 0;
  // The byte ranges (offset, size) of region `i` where the two results may differ: the rest
  // is known identical (the device compared them). Default: all of it.
  virtual std::vector<std::pair<uint64_t, uint64_t>> may_differ(size_t /*i*/, uint64_t size) { return {{0, size}}; }
  // Frees what run_variant kept.
  virtual void release() = 0;
};

// The regions a launch can reach through its parameter words (every aligned 8-byte word of
// the parameter buffer `params` laid out as `slots`), typed by `dtypes` (per parameter,
// compare::to_string names or ""), in address order, each allocation once.
std::vector<ShadowRegion> shadow_regions(ShadowDriver& d, const std::vector<uint8_t>& params,
                                         const std::vector<format::ParamSlot>& slots,
                                         const std::vector<std::string>& dtypes);

}  // namespace kerncap::capture
