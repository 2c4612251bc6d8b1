#include "capture/texture_tracker.hpp"

#include <algorithm>
#include <type_traits>

#include "common/log.hpp"

namespace kerncap::capture {
namespace {

template <typename P>
const P& params(const CUpti_CallbackData* cb) {
  return *static_cast<const P*>(cb->functionParams);
}

template <typename H>
uint64_t handle_value(H h) {
  if constexpr (std::is_pointer_v<H>) return reinterpret_cast<uint64_t>(h);
  else return static_cast<uint64_t>(h);
}

format::ArrayRecord from_3d(const CUDA_ARRAY3D_DESCRIPTOR& d, uint32_t levels) {
  format::ArrayRecord a;
  a.width = d.Width;
  a.height = d.Height;
  a.depth = d.Depth;
  a.format = static_cast<uint32_t>(d.Format);
  a.channels = d.NumChannels;
  a.flags = d.Flags;
  a.levels = levels;
  return a;
}

// A mipmapped array's level as an array of its own.
format::ArrayRecord level_of(const format::ArrayRecord& parent, uint32_t level) {
  format::ArrayRecord a = parent;
  const auto shrink = [&](uint64_t n) { return n ? std::max<uint64_t>(1, n >> level) : 0; };
  a.width = shrink(parent.width);
  a.height = shrink(parent.height);
  if (!(parent.flags & (format::kArrayLayered | format::kArrayCubemap))) a.depth = shrink(parent.depth);
  a.levels = 0;
  return a;
}

}  // namespace

const std::vector<CUpti_CallbackId>& TextureTracker::callback_ids() {
  static const std::vector<CUpti_CallbackId> ids = {
      CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2,         CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2,
      CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy,           CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate,
      CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayGetLevel, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy,
      CUPTI_DRIVER_TRACE_CBID_cuTexObjectCreate,        CUPTI_DRIVER_TRACE_CBID_cuTexObjectDestroy,
      CUPTI_DRIVER_TRACE_CBID_cuSurfObjectCreate,       CUPTI_DRIVER_TRACE_CBID_cuSurfObjectDestroy,
  };
  return ids;
}

bool TextureTracker::on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const auto& ids = callback_ids();
  if (std::find(ids.begin(), ids.end(), cbid) == ids.end()) return false;
  if (cb->callbackSite != CUPTI_API_EXIT) return true;
  const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
  if (rv && *rv != CUDA_SUCCESS) return true;
  std::lock_guard lk(mu_);
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2: {
      const auto& p = params<cuArrayCreate_v2_params>(cb);
      if (!p.pHandle || !p.pAllocateArray) return true;
      const CUDA_ARRAY_DESCRIPTOR& d = *p.pAllocateArray;
      TrackedArray a{handle_value(*p.pHandle), {}, 0, 0};
      a.desc.width = d.Width;
      a.desc.height = d.Height;
      a.desc.format = static_cast<uint32_t>(d.Format);
      a.desc.channels = d.NumChannels;
      arrays_[a.handle] = a;
      log::debug("track array {:#x} {}x{}", a.handle, d.Width, d.Height);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2: {
      const auto& p = params<cuArray3DCreate_v2_params>(cb);
      if (!p.pHandle || !p.pAllocateArray) return true;
      TrackedArray a{handle_value(*p.pHandle), from_3d(*p.pAllocateArray, 0), 0, 0};
      arrays_[a.handle] = a;
      log::debug("track array {:#x} {}x{}x{} flags {:#x}", a.handle, a.desc.width, a.desc.height, a.desc.depth,
                 a.desc.flags);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy:
      arrays_.erase(handle_value(params<cuArrayDestroy_params>(cb).hArray));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate: {
      const auto& p = params<cuMipmappedArrayCreate_params>(cb);
      if (!p.pHandle || !p.pMipmappedArrayDesc) return true;
      TrackedArray a{handle_value(*p.pHandle), from_3d(*p.pMipmappedArrayDesc, std::max(1u, p.numMipmapLevels)), 0, 0};
      mipmapped_[a.handle] = a;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayGetLevel: {
      const auto& p = params<cuMipmappedArrayGetLevel_params>(cb);
      const auto parent = mipmapped_.find(handle_value(p.hMipmappedArray));
      if (!p.pLevelArray || parent == mipmapped_.end()) return true;  // unknown parent: its level stays unknown
      TrackedArray a{handle_value(*p.pLevelArray), level_of(parent->second.desc, p.level), parent->first, p.level};
      arrays_[a.handle] = a;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy: {
      const uint64_t h = handle_value(params<cuMipmappedArrayDestroy_params>(cb).hMipmappedArray);
      mipmapped_.erase(h);
      std::erase_if(arrays_, [&](const auto& kv) { return kv.second.parent == h; });
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuTexObjectCreate: {
      const auto& p = params<cuTexObjectCreate_params>(cb);
      if (!p.pTexObject || !p.pResDesc || !p.pTexDesc) return true;
      TrackedObject o;
      o.handle = handle_value(*p.pTexObject);
      o.resource = *p.pResDesc;
      o.texture = *p.pTexDesc;
      if (p.pResViewDesc) o.view = *p.pResViewDesc;
      textures_[o.handle] = o;
      log::debug("track texture object {:#x} (resource type {})", o.handle, static_cast<int>(o.resource.resType));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuTexObjectDestroy:
      textures_.erase(handle_value(params<cuTexObjectDestroy_params>(cb).texObject));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuSurfObjectCreate: {
      const auto& p = params<cuSurfObjectCreate_params>(cb);
      if (!p.pSurfObject || !p.pResDesc) return true;
      TrackedObject o;
      o.handle = handle_value(*p.pSurfObject);
      o.surface = true;
      o.resource = *p.pResDesc;
      surfaces_[o.handle] = o;
      log::debug("track surface object {:#x}", o.handle);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuSurfObjectDestroy:
      surfaces_.erase(handle_value(params<cuSurfObjectDestroy_params>(cb).surfObject));
      return true;
    default:
      return false;
  }
}

std::optional<TrackedArray> TextureTracker::array(uint64_t handle) const {
  std::lock_guard lk(mu_);
  const auto it = arrays_.find(handle);
  if (it == arrays_.end()) return std::nullopt;
  return it->second;
}

std::optional<TrackedArray> TextureTracker::mipmapped(uint64_t handle) const {
  std::lock_guard lk(mu_);
  const auto it = mipmapped_.find(handle);
  if (it == mipmapped_.end()) return std::nullopt;
  return it->second;
}

std::vector<TrackedObject> TextureTracker::objects(uint64_t handle) const {
  std::lock_guard lk(mu_);
  std::vector<TrackedObject> out;
  if (const auto it = textures_.find(handle); it != textures_.end()) out.push_back(it->second);
  if (const auto it = surfaces_.find(handle); it != surfaces_.end()) out.push_back(it->second);
  return out;
}

bool TextureTracker::has_objects() const {
  std::lock_guard lk(mu_);
  return !textures_.empty() || !surfaces_.empty();
}

}  // namespace kerncap::capture
