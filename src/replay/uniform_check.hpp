#pragma once
// The comparison's device check (uniform_check.cu): per block of a piece of device memory,
// the one value all its bytes hold, or kMixed. compare_with_after asks it where the expected
// bytes are a known value (compare_plan.hpp) and reads back only the blocks it cannot vouch
// for. An evaluation loop's session also keeps its expected bytes on the device here
// (keep_expected): then it asks, per block, whether the replay's bytes equal them, and reads
// back only the blocks that differ. Loaded into the session's context on first use; kernels
// named kerncap_* are never timed as the captured kernel.
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "replay/compare_plan.hpp"

namespace kerncap::replay {

class UniformCheck {
 public:
  // Null (and why) when the check cannot run here: no embedded image, or the driver does
  // not load it (an architecture it was not built for). The comparison then reads back
  // every byte, as it always could.
  static std::unique_ptr<UniformCheck> create(std::string* why);
  ~UniformCheck();
  UniformCheck(const UniformCheck&) = delete;
  UniformCheck& operator=(const UniformCheck&) = delete;

  // One answer per block of `g` (kMixed or the value), for the piece at device address
  // `piece` (the region's replay address + g.begin); waits for `stream`.
  std::vector<uint32_t> run(CUdeviceptr piece, const CompareGrid& g, CUstream stream);

  // Copies every region's expected bytes (`regions`, manifest order; region i lives at
  // `addresses[i]`) to device memory of its own, for equal(). False (nothing kept, and why)
  // when the device lacks the memory or the check its kernel.
  bool keep_expected(const std::vector<std::vector<uint8_t>>& regions, const std::vector<uint64_t>& addresses,
                     std::string* why);
  // The device copy of region i's expected bytes (at the region's own address modulo 16), or 0.
  CUdeviceptr expected(size_t index) const { return index < expected_.size() ? expected_[index] : 0; }
  // One answer per block of `g`: 0 where the bytes at `piece` (region i's replay address +
  // g.begin) equal those at `expected` (expected(i) + g.begin), kMixed where any differs;
  // waits for `stream`.
  std::vector<uint32_t> equal(CUdeviceptr piece, CUdeviceptr expected, const CompareGrid& g, CUstream stream);

 private:
  UniformCheck() = default;
  // `function` over every block of `g` in passes of at most kBatchBlocks answers; `args`
  // gives the kernel's arguments for the pass of `count` blocks from block `from`.
  std::vector<uint32_t> answers(CUfunction function, const CompareGrid& g, CUstream stream,
                                const std::function<std::vector<void*>(unsigned long long& from,
                                                                       unsigned long long& count,
                                                                       unsigned long long& out)>& args);
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUfunction equal_ = nullptr;  // kerncap_equal; null: no equal()
  std::vector<CUdeviceptr> expected_alloc_, expected_;
  CUdeviceptr out_ = 0;
  uint64_t out_blocks_ = 0;  // answers out_ holds
  unsigned grid_ = 1;        // every SM busy
};

}  // namespace kerncap::replay
