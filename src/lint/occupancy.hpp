#pragma once
// Theoretical occupancy of one launch configuration, by the CUDA occupancy calculator's
// rules: the number of resident blocks per SM is the smallest of the limits set by warps,
// registers, shared memory and the block slots. Pure arithmetic, no GPU.
#include <cstdint>
#include <string>

namespace kerncap::lint {

// Per-SM limits of one architecture (the calculator's "GPU data" column).
struct SmLimits {
  int sm = 90;
  int max_threads_per_sm = 2048;
  int max_warps_per_sm = 64;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int max_registers_per_block = 65536;
  int max_registers_per_thread = 255;
  int register_alloc_unit = 256;         // registers are given to a warp in these steps
  int shared_per_sm = 228 * 1024;        // the largest carveout
  int max_shared_per_block = 227 * 1024; // opt-in maximum a block may use
  int shared_reserved_per_block = 1024;  // the system's part at the start of each block's shared
  int shared_alloc_unit = 128;
};

// Limits for an SM version; throws Error(Input) for one kerncap has no table for.
SmLimits sm_limits(int sm);

struct LaunchResources {
  uint32_t threads_per_block = 0;
  int registers_per_thread = 0;
  uint64_t static_shared = 0;    // the kernel's __shared__ bytes, without the reserved 1 KiB
  uint64_t dynamic_shared = 0;   // what the launch asked for
};

struct Occupancy {
  int warps_per_block = 0;
  int limit_warps = 0;       // blocks per SM each resource allows
  int limit_registers = 0;
  int limit_shared = 0;
  int limit_blocks = 0;
  int blocks_per_sm = 0;     // the smallest of the four; 0: the block cannot launch
  int active_warps = 0;
  double occupancy = 0;      // active warps / max warps per SM
  std::string limited_by;    // "warps" | "registers" | "shared memory" | "blocks" (first of ties)
  uint64_t shared_per_block = 0;   // allocated, with the reserved part and rounding
  int registers_per_warp = 0;      // allocated, after rounding
  std::string why_zero;            // set when blocks_per_sm is 0
};

Occupancy occupancy(const LaunchResources& r, const SmLimits& lim);

}  // namespace kerncap::lint
