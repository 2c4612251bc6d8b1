#pragma once
// The replay process's copy of the application's address layout: reservations made right
// after cuInit (before any context or allocation of ours), physical memory mapped only
// where captured bytes live, and a relocation for whatever could not come back.
#include <cuda.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "replay/plan.hpp"
#include "replay/relocation.hpp"

namespace kerncap::replay {

struct PlacementStats {
  uint32_t blocks = 0, blocks_at_hint = 0;  // 32 MiB blocks tried / honoured
  uint32_t runs_fallback = 0;               // piece runs reserved one by one after a block missed
  uint32_t runs_relocated = 0;              // piece runs that had to move
  uint64_t mapped_bytes = 0;
  // Of regions the application had in host memory mapped for the device (cudaHostAlloc
  // Mapped, cudaHostRegister): bytes mapped in pinned host memory at their addresses, and
  // bytes that had to be device memory (the device cannot map host memory through the
  // VMM API), which the kernel reads far faster than the application did.
  uint64_t host_bytes = 0, host_as_device_bytes = 0;
};

class AddressSpace {
 public:
  AddressSpace(CUdevice dev, bool allow_relocate);
  ~AddressSpace();
  AddressSpace(const AddressSpace&) = delete;
  AddressSpace& operator=(const AddressSpace&) = delete;

  // Test hook: occupy the span of `region` first so that it collides.
  void occupy_for_test(const Span& region);
  // Phase 1, right after cuInit. Throws Error(Device) when a span cannot come back and
  // relocation is forbidden. host[i]: region i was host memory mapped for the device in the
  // application; its pieces get pinned host memory (where the device supports it).
  void reserve(const std::vector<Span>& regions, const std::vector<bool>& host = {});
  // Phase 2, with the context current: create, map and enable access on needed pieces.
  void map();

  uint64_t address_of(size_t region_index) const { return addresses_.at(region_index); }
  RelocationMap& relocations() { return relocations_; }
  const PlacementStats& stats() const { return stats_; }

 private:
  struct Reservation {
    uint64_t addr = 0, size = 0;
  };
  struct Mapping {
    uint64_t addr = 0, size = 0;
    CUmemGenericAllocationHandle handle = 0;
  };
  std::optional<uint64_t> try_reserve(uint64_t size, uint64_t hint, bool keep_if_moved);

  CUdevice dev_;
  bool allow_relocate_;
  uint64_t granularity_ = kPieceAlign;
  std::vector<Reservation> reservations_;
  std::vector<Reservation> occupiers_;
  [[noreturn]] void out_of_device_memory(uint64_t piece) const;
  struct ToMap {
    Span span;          // where physical memory goes (new address)
    bool host = false;  // pinned host memory rather than device memory
  };
  std::vector<ToMap> to_map_;
  std::vector<Mapping> mappings_;
  std::vector<uint64_t> addresses_;
  RelocationMap relocations_;
  PlacementStats stats_;
};

}  // namespace kerncap::replay
