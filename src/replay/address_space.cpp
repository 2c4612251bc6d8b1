#include "replay/address_space.hpp"

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"

namespace kerncap::replay {
namespace {

CUmemAllocationProp device_prop(CUdevice dev) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  return prop;
}

}  // namespace

AddressSpace::AddressSpace(CUdevice dev, bool allow_relocate) : dev_(dev), allow_relocate_(allow_relocate) {
  CUmemAllocationProp prop = device_prop(dev);
  size_t g = 0;
  if (KC_CU_TRY(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) == CUDA_SUCCESS && g)
    granularity_ = g;
}

AddressSpace::~AddressSpace() {
  // Never throws: a failed release is logged and the rest are still released.
  auto release = [](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) log::warn("{}", cu_error_text(r, what, __FILE__, __LINE__));
  };
  const Driver& d = driver();
  for (auto& m : mappings_) {
    release(d.cuMemUnmap(m.addr, m.size), "cuMemUnmap");
    release(d.cuMemRelease(m.handle), "cuMemRelease");
  }
  for (auto& r : reservations_) release(d.cuMemAddressFree(r.addr, r.size), "cuMemAddressFree");
  for (auto& r : occupiers_) release(d.cuMemAddressFree(r.addr, r.size), "cuMemAddressFree");
}

// Reserves `size` bytes at `hint`. Returns the address when it landed at the hint; when it
// landed elsewhere, frees it (or keeps it and returns it if keep_if_moved).
std::optional<uint64_t> AddressSpace::try_reserve(uint64_t size, uint64_t hint, bool keep_if_moved) {
  CUdeviceptr p = 0;
  CUresult r = KC_CU_TRY(cuMemAddressReserve(&p, size, 0, hint, 0));
  if (r != CUDA_SUCCESS) {
    if (!keep_if_moved) return std::nullopt;
    KC_CU(cuMemAddressReserve(&p, size, 0, 0, 0));  // anywhere
  }
  if (p == hint || keep_if_moved) {
    reservations_.push_back({p, size});
    return p;
  }
  KC_CU(cuMemAddressFree(p, size));
  return std::nullopt;
}

void AddressSpace::occupy_for_test(const Span& region) {
  for (uint64_t align : {granularity_, kBlockAlign}) {
    Span s{align_down(region.begin, align), align_up(region.end, align)};
    CUdeviceptr p = 0;
    if (KC_CU_TRY(cuMemAddressReserve(&p, s.size(), 0, s.begin, 0)) != CUDA_SUCCESS) continue;
    occupiers_.push_back({p, s.size()});
    if (p == s.begin) {
      log::info("test: occupied {} (+{}) so that the region there collides", hex_addr(p), human_bytes(s.size()));
      return;
    }
  }
  log::warn("test: could not occupy the span of region at {}; no collision forced", hex_addr(region.begin));
}

void AddressSpace::reserve(const std::vector<Span>& regions) {
  addresses_.assign(regions.size(), 0);
  for (size_t i = 0; i < regions.size(); ++i) addresses_[i] = regions[i].begin;
  for (const Block& b : plan_blocks(regions, kBlockAlign, granularity_)) {
    ++stats_.blocks;
    if (try_reserve(b.span.size(), b.span.begin, false)) {
      ++stats_.blocks_at_hint;
      for (const auto& p : b.pieces) to_map_.push_back(p);
      continue;
    }
    // The block is (partly) taken: bring back each run of pieces on its own.
    for (const Span& run : b.pieces) {
      ++stats_.runs_fallback;
      if (try_reserve(run.size(), run.begin, false)) {
        to_map_.push_back(run);
        continue;
      }
      if (!allow_relocate_)
        device_error(fmt::format("the captured range {}..{} cannot be reserved at its address in this process "
                                 "(the driver placed something there) and --no-relocate forbids moving it; "
                                 "run without --no-relocate",
                                 hex_addr(run.begin), hex_addr(run.end)));
      uint64_t at = *try_reserve(run.size(), run.begin, true);
      ++stats_.runs_relocated;
      relocations_.add({run.begin, run.end, at, false});
      to_map_.push_back({at, at + run.size()});
      log::info("relocated {}..{} to {}", hex_addr(run.begin), hex_addr(run.end), hex_addr(at));
    }
  }
  for (size_t i = 0; i < regions.size(); ++i) addresses_[i] = relocations_.translate(regions[i].begin);
}

void AddressSpace::map() {
  CUmemAllocationProp prop = device_prop(dev_);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (const Span& s : to_map_) {
    Mapping m{s.begin, s.size(), 0};
    KC_CU(cuMemCreate(&m.handle, m.size, &prop, 0));
    CUresult r = KC_CU_TRY(cuMemMap(m.addr, m.size, 0, m.handle, 0));
    if (r != CUDA_SUCCESS) {
      driver().cuMemRelease(m.handle);
      cu_fail(r, fmt::format("cuMemMap({}, {})", hex_addr(m.addr), m.size).c_str(), __FILE__, __LINE__);
    }
    mappings_.push_back(m);
    KC_CU(cuMemSetAccess(m.addr, m.size, &access, 1));
    stats_.mapped_bytes += m.size;
  }
}

}  // namespace kerncap::replay
