// The CUDA occupancy calculator's arithmetic (per-warp register allocation, shared memory
// with the per-block reserved part, warp and block slots).
#include "lint/occupancy.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::lint {

namespace {

uint64_t round_up(uint64_t v, uint64_t unit) { return unit ? (v + unit - 1) / unit * unit : v; }

}  // namespace

SmLimits sm_limits(int sm) {
  SmLimits l;
  l.sm = sm;
  switch (sm) {
    case 90: return l;  // Hopper (H100/H200): the defaults above
    case 80:            // A100
      l.shared_per_sm = 164 * 1024;
      l.max_shared_per_block = 163 * 1024;
      return l;
    case 86: case 89:   // GA10x, Ada: 1536 threads, 16 (86) / 24 (89) blocks, 100 KiB shared
      l.max_threads_per_sm = 1536;
      l.max_warps_per_sm = 48;
      l.max_blocks_per_sm = sm == 86 ? 16 : 24;
      l.shared_per_sm = 100 * 1024;
      l.max_shared_per_block = 99 * 1024;
      return l;
    case 100:           // B200: as Hopper
      return l;
    default:
      input_error(fmt::format("no occupancy table for sm_{} (kerncap knows sm_80, 86, 89, 90, 100)", sm));
  }
}

Occupancy occupancy(const LaunchResources& r, const SmLimits& lim) {
  Occupancy o;
  if (r.threads_per_block == 0) {
    o.why_zero = "the block has no threads";
    return o;
  }
  o.warps_per_block = static_cast<int>((r.threads_per_block + 31) / 32);
  o.limit_blocks = lim.max_blocks_per_sm;
  o.limit_warps = lim.max_warps_per_sm / o.warps_per_block;
  if (static_cast<int>(r.threads_per_block) > 1024) o.why_zero = "more than 1024 threads per block";

  if (r.registers_per_thread <= 0) {
    o.limit_registers = lim.max_blocks_per_sm;
  } else if (r.registers_per_thread > lim.max_registers_per_thread) {
    o.limit_registers = 0;
    o.why_zero = fmt::format("{} registers per thread exceed {}", r.registers_per_thread, lim.max_registers_per_thread);
  } else {
    o.registers_per_warp = static_cast<int>(round_up(static_cast<uint64_t>(r.registers_per_thread) * 32,
                                                     static_cast<uint64_t>(lim.register_alloc_unit)));
    const int warps_by_regs = lim.max_registers_per_block / o.registers_per_warp;
    o.limit_registers = (warps_by_regs / o.warps_per_block) * (lim.registers_per_sm / lim.max_registers_per_block);
    if (o.limit_registers == 0 && o.why_zero.empty())
      o.why_zero = fmt::format("{} warps x {} registers exceed the register file", o.warps_per_block, o.registers_per_warp);
  }

  const uint64_t requested = r.static_shared + r.dynamic_shared;
  o.shared_per_block = round_up(requested + static_cast<uint64_t>(lim.shared_reserved_per_block),
                                static_cast<uint64_t>(lim.shared_alloc_unit));
  if (requested > static_cast<uint64_t>(lim.max_shared_per_block)) {
    o.limit_shared = 0;
    if (o.why_zero.empty())
      o.why_zero = fmt::format("{} bytes of shared memory exceed the {} a block may use", requested, lim.max_shared_per_block);
  } else {
    o.limit_shared = static_cast<int>(static_cast<uint64_t>(lim.shared_per_sm) / o.shared_per_block);
  }

  // Ties name the first in this order, as the calculator's "limited by" does.
  const std::pair<int, const char*> limits[] = {{o.limit_warps, "warps"},
                                                {o.limit_registers, "registers"},
                                                {o.limit_shared, "shared memory"},
                                                {o.limit_blocks, "blocks"}};
  o.blocks_per_sm = o.limit_warps;
  o.limited_by = "warps";
  for (const auto& [v, name] : limits)
    if (v < o.blocks_per_sm) {
      o.blocks_per_sm = v;
      o.limited_by = name;
    }
  if (!o.why_zero.empty()) o.blocks_per_sm = 0;
  o.active_warps = o.blocks_per_sm * o.warps_per_block;
  o.occupancy = static_cast<double>(o.active_warps) / lim.max_warps_per_sm;
  return o;
}

}  // namespace kerncap::lint
