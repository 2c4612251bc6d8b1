#include "replay/textures.hpp"

#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace kerncap::replay {
namespace {

CUDA_TEXTURE_DESC texture_desc(const format::TextureDesc& d) {
  CUDA_TEXTURE_DESC t{};
  for (size_t i = 0; i < 3; ++i) t.addressMode[i] = static_cast<CUaddress_mode>(d.address_mode[i]);
  t.filterMode = static_cast<CUfilter_mode>(d.filter_mode);
  t.flags = d.flags;
  t.maxAnisotropy = d.max_anisotropy;
  t.mipmapFilterMode = static_cast<CUfilter_mode>(d.mipmap_filter_mode);
  t.mipmapLevelBias = d.mipmap_level_bias;
  t.minMipmapLevelClamp = d.min_mipmap_level_clamp;
  t.maxMipmapLevelClamp = d.max_mipmap_level_clamp;
  for (size_t i = 0; i < 4; ++i) t.borderColor[i] = d.border_color[i];
  return t;
}

CUDA_RESOURCE_VIEW_DESC view_desc(const format::ViewDesc& v) {
  CUDA_RESOURCE_VIEW_DESC d{};
  d.format = static_cast<CUresourceViewFormat>(v.format);
  d.width = v.width;
  d.height = v.height;
  d.depth = v.depth;
  d.firstMipmapLevel = v.first_level;
  d.lastMipmapLevel = v.last_level;
  d.firstLayer = v.first_layer;
  d.lastLayer = v.last_layer;
  return d;
}

}  // namespace

ReplayTextures::~ReplayTextures() { release(); }

void ReplayTextures::create(const format::Manifest& m, const std::function<uint64_t(size_t)>& region_address,
                            const std::function<uint64_t(uint64_t)>& translate) {
  const format::Textures& t = m.textures;
  try {
    for (const auto& rec : t.arrays) {
      Array a;
      a.record = rec;
      for (size_t i = 0; i < m.regions.size(); ++i)
        if (m.regions[i].id == rec.region) a.buffer = region_address(i);
      CUDA_ARRAY3D_DESCRIPTOR d{};
      d.Width = rec.width;
      d.Height = rec.height;
      d.Depth = rec.depth;
      d.Format = static_cast<CUarray_format>(rec.format);
      d.NumChannels = rec.channels;
      d.Flags = rec.flags;
      if (rec.levels) KC_CU(cuMipmappedArrayCreate(&a.mipmapped, &d, rec.levels));
      else KC_CU(cuArray3DCreate(&a.array, &d));
      arrays_.push_back(a);
    }
    auto array_of = [&](uint32_t id) -> Array& {
      for (auto& a : arrays_)
        if (a.record.id == id) return a;
      input_error(fmt::format("texture object refers to array {}, which the capture does not have", id));
    };
    for (const auto& o : t.objects) {
      CUDA_RESOURCE_DESC res{};
      switch (o.resource) {
        case format::ResourceType::Array:
          res.resType = CU_RESOURCE_TYPE_ARRAY;
          res.res.array.hArray = array_of(o.array).array;
          if (o.surface) array_of(o.array).written = true;
          break;
        case format::ResourceType::MipmappedArray:
          res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
          res.res.mipmap.hMipmappedArray = array_of(o.array).mipmapped;
          break;
        case format::ResourceType::Linear:
          res.resType = CU_RESOURCE_TYPE_LINEAR;
          res.res.linear.devPtr = translate(o.address);
          res.res.linear.format = static_cast<CUarray_format>(o.format);
          res.res.linear.numChannels = o.channels;
          res.res.linear.sizeInBytes = o.size;
          break;
        case format::ResourceType::Pitch2D:
          res.resType = CU_RESOURCE_TYPE_PITCH2D;
          res.res.pitch2D.devPtr = translate(o.address);
          res.res.pitch2D.format = static_cast<CUarray_format>(o.format);
          res.res.pitch2D.numChannels = o.channels;
          res.res.pitch2D.width = o.width;
          res.res.pitch2D.height = o.height;
          res.res.pitch2D.pitchInBytes = o.pitch;
          break;
      }
      Object made;
      made.surface = o.surface;
      if (o.surface) {
        CUsurfObject s = 0;
        KC_CU(cuSurfObjectCreate(&s, &res));
        made.handle = s;
      } else {
        const CUDA_TEXTURE_DESC td = texture_desc(*o.texture);
        CUDA_RESOURCE_VIEW_DESC vd{};
        if (o.view) vd = view_desc(*o.view);
        CUtexObject h = 0;
        KC_CU(cuTexObjectCreate(&h, &res, &td, o.view ? &vd : nullptr));
        made.handle = h;
      }
      objects_.push_back(made);
      object_ids_.push_back(o.id);
      log::debug("{} object {:#x} re-created as {:#x}", o.surface ? "surface" : "texture", o.handle, made.handle);
    }
    handles_ = t.handles;
  } catch (...) {
    release();
    throw;
  }
}

void ReplayTextures::copy(const Array& a, bool to_array) const {
  uint64_t at = 0;
  for (uint32_t l = 0; l < format::level_count(a.record); ++l) {
    CUarray level = a.array;
    if (a.mipmapped) KC_CU(cuMipmappedArrayGetLevel(&level, a.mipmapped, l));
    const format::LevelExtent e = format::level_extent(a.record, l);
    CUDA_MEMCPY3D c{};
    if (to_array) {
      c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      c.srcDevice = a.buffer + at;
      c.srcPitch = e.row_bytes;
      c.srcHeight = e.rows;
      c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
      c.dstArray = level;
    } else {
      c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
      c.srcArray = level;
      c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      c.dstDevice = a.buffer + at;
      c.dstPitch = e.row_bytes;
      c.dstHeight = e.rows;
    }
    c.WidthInBytes = e.row_bytes;
    c.Height = e.rows;
    c.Depth = e.slices;
    KC_CU(cuMemcpy3D(&c));
    at += e.bytes();
  }
}

void ReplayTextures::upload() const {
  for (const auto& a : arrays_) copy(a, true);
}

void ReplayTextures::download() const {
  for (const auto& a : arrays_)
    if (a.written) copy(a, false);
}

void ReplayTextures::patch(std::vector<uint8_t>& params) const {
  for (const auto& h : handles_) {
    for (size_t k = 0; k < object_ids_.size(); ++k) {
      if (object_ids_[k] != h.object) continue;
      if (uint64_t{h.offset} + 8 > params.size())
        input_error(fmt::format("texture handle at parameter offset {} lies outside the {}-byte parameter buffer",
                                h.offset, params.size()));
      std::memcpy(params.data() + h.offset, &objects_[k].handle, 8);
    }
  }
}

void ReplayTextures::release() noexcept {
  if (arrays_.empty() && objects_.empty()) return;
  const Driver& d = driver();
  auto warn = [](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) log::warn("{}", cu_error_text(r, what, __FILE__, __LINE__));
  };
  for (const auto& o : objects_) {
    if (o.surface) warn(d.cuSurfObjectDestroy(o.handle), "cuSurfObjectDestroy");
    else warn(d.cuTexObjectDestroy(o.handle), "cuTexObjectDestroy");
  }
  for (const auto& a : arrays_) {
    if (a.array) warn(d.cuArrayDestroy(a.array), "cuArrayDestroy");
    if (a.mipmapped) warn(d.cuMipmappedArrayDestroy(a.mipmapped), "cuMipmappedArrayDestroy");
  }
  objects_.clear();
  arrays_.clear();
  object_ids_.clear();
  handles_.clear();
}

}  // namespace kerncap::replay
