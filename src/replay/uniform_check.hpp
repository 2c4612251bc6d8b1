#pragma once
// The comparison's device check (uniform_check.cu): per block of a piece of device memory,
// the one value all its bytes hold, or kMixed. compare_with_after asks it where the expected
// bytes are a known value (compare_plan.hpp) and reads back only the blocks it cannot vouch
// for. Loaded into the session's context on first use; kernels named kerncap_* are never
// timed as the captured kernel.
#include <cuda.h>

#include <cstdint>
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

 private:
  UniformCheck() = default;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUdeviceptr out_ = 0;
  uint64_t out_blocks_ = 0;  // answers out_ holds
  unsigned grid_ = 1;        // every SM busy
};

}  // namespace kerncap::replay
