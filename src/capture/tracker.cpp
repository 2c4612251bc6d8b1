#include "capture/tracker.hpp"

#include <cuda.h>

#include <algorithm>

#include "common/log.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {
namespace {

using format::MemKind;

template <typename P>
const P& params(const CUpti_CallbackData* cb) {
  return *static_cast<const P*>(cb->functionParams);
}

uint64_t ptr_value(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace

const std::vector<CUpti_CallbackId>& Tracker::callback_ids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost,
      CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
      CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
      CUPTI_DRIVER_TRACE_CBID_cuMemMap,
      CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
  };
  return ids;
}

bool Tracker::on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_EXIT) return false;
  // Every launch's exit passes here too: answer it without taking the lock.
  const auto& ids = callback_ids();
  if (std::find(ids.begin(), ids.end(), cbid) == ids.end()) return false;
  const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
  if (rv && *rv != CUDA_SUCCESS) return false;
  std::lock_guard lk(mu_);
  auto add = [&](uint64_t base, uint64_t size, MemKind kind) {
    ranges_.add(base, size, static_cast<int>(kind));
    log::debug("track {:#x} +{} ({})", base, size, format::to_string(kind));
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = params<cuMemAlloc_v2_params>(cb);
      add(*p.dptr, p.bytesize, MemKind::Device);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = params<cuMemAllocPitch_v2_params>(cb);
      add(*p.dptr, *p.pPitch * p.Height, MemKind::Pitch);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto& p = params<cuMemAllocAsync_params>(cb);
      add(*p.dptr, p.bytesize, MemKind::Async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto& p = params<cuMemAllocFromPoolAsync_params>(cb);
      add(*p.dptr, p.bytesize, MemKind::Async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& p = params<cuMemAllocManaged_params>(cb);
      add(*p.dptr, p.bytesize, MemKind::Managed);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc_v2: {
      const auto& p = params<cuMemHostAlloc_params>(cb);
      add(ptr_value(*p.pp), p.bytesize, MemKind::HostMapped);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto& p = params<cuMemAllocHost_v2_params>(cb);
      add(ptr_value(*p.pp), p.bytesize, MemKind::HostMapped);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      const auto& p = params<cuMemHostRegister_v2_params>(cb);
      add(ptr_value(p.p), p.bytesize, MemKind::HostRegistered);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      ranges_.erase_at(params<cuMemFree_v2_params>(cb).dptr);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      ranges_.erase_at(params<cuMemFreeAsync_params>(cb).dptr);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      ranges_.erase_at(ptr_value(params<cuMemFreeHost_params>(cb).p));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      ranges_.erase_at(ptr_value(params<cuMemHostUnregister_params>(cb).p));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      const auto& p = params<cuMemMap_params>(cb);
      add(p.ptr, p.size, MemKind::Vmm);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto& p = params<cuMemUnmap_params>(cb);
      ranges_.erase_span(p.ptr, p.size);
      return true;
    }
    default:
      return false;
  }
}

std::vector<TrackedRange> Tracker::live() const {
  std::lock_guard lk(mu_);
  return ranges_.all();
}

}  // namespace kerncap::capture
