// Theoretical occupancy against values worked out by hand with the CUDA occupancy
// calculator's rules for sm_90 (2048 threads / 64 warps / 32 blocks per SM, 64K registers
// given to warps in steps of 256, 228 KiB shared per SM with 1 KiB reserved per block).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "lint/occupancy.hpp"

namespace kerncap::lint {
namespace {

Occupancy occ(uint32_t threads, int regs, uint64_t static_smem = 0, uint64_t dyn_smem = 0) {
  return occupancy({threads, regs, static_smem, dyn_smem}, sm_limits(90));
}

TEST(LintOccupancy, WarpsLimitAtFullOccupancy) {
  // 256 threads = 8 warps: 64/8 = 8 blocks by warps; 32 regs x 32 = 1024 per warp, 64 warps
  // by registers = 8 blocks; shared 1 KiB (reserved) -> 228 blocks. 8 blocks, 64 warps, 100%.
  const Occupancy o = occ(256, 32);
  EXPECT_EQ(o.warps_per_block, 8);
  EXPECT_EQ(o.limit_warps, 8);
  EXPECT_EQ(o.limit_registers, 8);
  EXPECT_EQ(o.limit_shared, 228);
  EXPECT_EQ(o.limit_blocks, 32);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_EQ(o.active_warps, 64);
  EXPECT_DOUBLE_EQ(o.occupancy, 1.0);
  EXPECT_EQ(o.limited_by, "warps");  // a tie with registers names the first
  EXPECT_EQ(o.shared_per_block, 1024u);
}

TEST(LintOccupancy, RegistersLimit) {
  // 128 threads = 4 warps, 64 regs: 2048 per warp, 32 warps -> 8 blocks (warps allow 16).
  const Occupancy o = occ(128, 64);
  EXPECT_EQ(o.limit_warps, 16);
  EXPECT_EQ(o.limit_registers, 8);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_EQ(o.active_warps, 32);
  EXPECT_DOUBLE_EQ(o.occupancy, 0.5);
  EXPECT_EQ(o.limited_by, "registers");
}

TEST(LintOccupancy, RegisterAllocationRoundsPerWarp) {
  // 168 regs x 32 = 5376 (already a multiple of 256): 65536 / 5376 = 12 warps -> 1 block of 8.
  Occupancy o = occ(256, 168);
  EXPECT_EQ(o.registers_per_warp, 5376);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.active_warps, 8);
  // 33 regs x 32 = 1056 -> 1280: 51 warps -> 6 blocks of 8 (not 7, as 1056 would give).
  o = occ(256, 33);
  EXPECT_EQ(o.registers_per_warp, 1280);
  EXPECT_EQ(o.limit_registers, 6);
  EXPECT_EQ(o.blocks_per_sm, 6);
  EXPECT_EQ(o.limited_by, "registers");
}

TEST(LintOccupancy, SharedMemoryLimitCountsTheReservedKiB) {
  // 48 KiB dynamic + 1 KiB reserved = 50176 B: 233472 / 50176 = 4 blocks of 2 warps.
  const Occupancy o = occ(64, 16, 0, 48 * 1024);
  EXPECT_EQ(o.shared_per_block, 50176u);
  EXPECT_EQ(o.limit_shared, 4);
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_EQ(o.active_warps, 8);
  EXPECT_EQ(o.limited_by, "shared memory");
  // Static and dynamic add up; 100 B round up to the 128 B unit: 4096+100+1024 -> 5248.
  EXPECT_EQ(occ(64, 16, 4096, 100).shared_per_block, 5248u);
}

TEST(LintOccupancy, BlockSlotsLimitSmallBlocks) {
  // 32 threads, few registers: warps allow 64 blocks, the SM holds 32.
  const Occupancy o = occ(32, 16);
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_EQ(o.active_warps, 32);
  EXPECT_EQ(o.limited_by, "blocks");
  // A partial warp still takes a whole warp slot: 33 threads = 2 warps.
  EXPECT_EQ(occ(33, 16).warps_per_block, 2);
}

TEST(LintOccupancy, LaunchesThatCannotRun) {
  EXPECT_EQ(occ(256, 256).blocks_per_sm, 0);                     // over 255 registers
  EXPECT_EQ(occ(1024, 255).blocks_per_sm, 0);                    // 32 warps x 8192 regs > 64K
  EXPECT_EQ(occ(128, 32, 0, 228 * 1024).blocks_per_sm, 0);       // over 227 KiB per block
  const Occupancy o = occ(128, 32, 0, 227 * 1024);               // exactly the per-block maximum
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_FALSE(occ(1024, 255).why_zero.empty());
}

TEST(LintOccupancy, UnknownSmIsRefused) {
  EXPECT_THROW(sm_limits(75), Error);
  EXPECT_EQ(sm_limits(80).shared_per_sm, 164 * 1024);
}

}  // namespace
}  // namespace kerncap::lint
