#include "replay/address_space.hpp"

#include <algorithm>

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

// Pinned host memory the device reaches over the bus, as cudaHostAlloc(Mapped) memory is.
CUmemAllocationProp host_prop() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;  // id ignored
  return prop;
}

// Whether `dev` maps host-located physical memory through cuMemCreate/cuMemMap (CUDA 12.2+
// drivers), at a granularity that divides `piece_align` (pieces are aligned to the device's).
bool maps_host_memory(CUdevice dev, uint64_t piece_align) {
  int supported = 0;
  if (KC_CU_TRY(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev)) !=
          CUDA_SUCCESS ||
      !supported)
    return false;
  CUmemAllocationProp prop = host_prop();
  size_t g = 0;
  return KC_CU_TRY(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) == CUDA_SUCCESS && g &&
         piece_align % g == 0;
}

bool overlaps_host(const Span& s, const std::vector<Span>& regions, const std::vector<bool>& host) {
  for (size_t i = 0; i < regions.size() && i < host.size(); ++i)
    if (host[i] && regions[i].begin < s.end && s.begin < regions[i].end) return true;
  return false;
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

void AddressSpace::reserve(const std::vector<Span>& regions, const std::vector<bool>& host) {
  addresses_.assign(regions.size(), 0);
  for (size_t i = 0; i < regions.size(); ++i) addresses_[i] = regions[i].begin;
  const auto is_host = [&](const Span& s) { return overlaps_host(s, regions, host); };
  for (const Block& b : plan_blocks(regions, kBlockAlign, granularity_)) {
    ++stats_.blocks;
    if (try_reserve(b.span.size(), b.span.begin, false)) {
      ++stats_.blocks_at_hint;
      for (const auto& p : b.pieces)
        for (const KindRun& k : split_by_kind(p, granularity_, is_host)) to_map_.push_back({k.span, k.host});
      continue;
    }
    // The block is (partly) taken: bring back each run of pieces on its own.
    for (const Span& run : b.pieces) {
      ++stats_.runs_fallback;
      const std::vector<KindRun> kinds = split_by_kind(run, granularity_, is_host);
      if (try_reserve(run.size(), run.begin, false)) {
        for (const KindRun& k : kinds) to_map_.push_back({k.span, k.host});
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
      for (const KindRun& k : kinds) to_map_.push_back({{k.span.begin - run.begin + at, k.span.end - run.begin + at}, k.host});
      log::info("relocated {}..{} to {}", hex_addr(run.begin), hex_addr(run.end), hex_addr(at));
    }
  }
  for (size_t i = 0; i < regions.size(); ++i) addresses_[i] = relocations_.translate(regions[i].begin);
}

// Issue 38's fault matrix (a capture larger than the GPU memory another process left free): say
// how much the capture needs, what the device has free, and what to do, not only the driver's
// CUDA_ERROR_OUT_OF_MEMORY.
void AddressSpace::out_of_device_memory(uint64_t piece) const {
  uint64_t need = 0;
  for (const ToMap& t : to_map_)
    if (!t.host) need += t.span.size();
  size_t free = 0, total = 0;
  const bool known = KC_CU_TRY(cuMemGetInfo(&free, &total)) == CUDA_SUCCESS;
  device_error(fmt::format(
      "out of device memory while mapping the capture at its addresses (CUDA_ERROR_OUT_OF_MEMORY for a {} piece, "
      "{} already mapped): the capture needs {} of device memory{}; other processes may hold the rest (nvidia-smi "
      "lists them): free it, or replay on another GPU (CUDA_VISIBLE_DEVICES)",
      human_bytes(piece), human_bytes(stats_.mapped_bytes), human_bytes(need),
      known ? fmt::format(" and the GPU has {} free of {}", human_bytes(free), human_bytes(total)) : std::string()));
}

void AddressSpace::map() {
  const CUmemAllocationProp on_device = device_prop(dev_);
  const bool host_ok = std::any_of(to_map_.begin(), to_map_.end(), [](const ToMap& t) { return t.host; }) &&
                       maps_host_memory(dev_, granularity_);
  CUmemAccessDesc access{};
  access.location = on_device.location;  // the device reaches every piece, wherever it lives
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (const ToMap& t : to_map_) {
    const Span& s = t.span;
    const bool host = t.host && host_ok;
    const CUmemAllocationProp prop = host ? host_prop() : on_device;
    Mapping m{s.begin, s.size(), 0};
    const CUresult created = KC_CU_TRY(cuMemCreate(&m.handle, m.size, &prop, 0));
    if (created == CUDA_ERROR_OUT_OF_MEMORY && !host) out_of_device_memory(m.size);
    if (created != CUDA_SUCCESS) cu_fail(created, "cuMemCreate(&m.handle, m.size, &prop, 0)", __FILE__, __LINE__);
    CUresult r = KC_CU_TRY(cuMemMap(m.addr, m.size, 0, m.handle, 0));
    if (r != CUDA_SUCCESS) {
      driver().cuMemRelease(m.handle);
      cu_fail(r, fmt::format("cuMemMap({}, {})", hex_addr(m.addr), m.size).c_str(), __FILE__, __LINE__);
    }
    mappings_.push_back(m);
    KC_CU(cuMemSetAccess(m.addr, m.size, &access, 1));
    stats_.mapped_bytes += m.size;
    if (host) stats_.host_bytes += m.size;
    else if (t.host) stats_.host_as_device_bytes += m.size;
  }
  if (stats_.host_bytes)
    log::info("{} of host memory the application mapped for the device replayed in pinned host memory at its "
              "addresses",
              human_bytes(stats_.host_bytes));
  if (stats_.host_as_device_bytes)
    log::warn("{} of host memory the application mapped for the device is replayed in device memory (this "
              "device or driver cannot map host memory at a chosen address): the kernel reads it far faster "
              "than the application did, so its time is not the application's",
              human_bytes(stats_.host_as_device_bytes));
}

}  // namespace kerncap::replay
