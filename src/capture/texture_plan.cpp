#include "capture/texture_plan.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace kerncap::capture {
namespace {

using format::ResourceType;

// The aligned 8-byte words of the parameters that may hold a handle: inside one parameter
// of 8 bytes or more (a handle is 8 bytes; two 4-byte scalars side by side are not one).
std::vector<uint32_t> candidate_offsets(std::span<const uint8_t> params, const std::vector<format::ParamSlot>& slots) {
  std::vector<uint32_t> out;
  if (slots.empty()) {
    for (uint32_t off = 0; off + 8 <= params.size(); off += 8) out.push_back(off);
    return out;
  }
  for (const auto& s : slots) {
    if (s.size < 8) continue;
    const uint64_t end = std::min<uint64_t>(uint64_t{s.offset} + s.size, params.size());
    for (uint64_t off = (uint64_t{s.offset} + 7) / 8 * 8; off + 8 <= end; off += 8) out.push_back(static_cast<uint32_t>(off));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

class Planner {
 public:
  Planner(const TextureTracker& tracker, TexturePlan& plan) : tracker_(tracker), plan_(plan) {}

  // Adds the object behind `word` at parameter offset `off`; false when it is refused.
  bool add(uint32_t off, uint64_t word) {
    const auto found = tracker_.objects(word);
    if (found.empty()) return true;
    if (found.size() > 1)
      return refuse(fmt::format("parameter bytes at offset {} hold {:#x}, the handle of both a live texture object "
                                "and a live surface object: kerncap cannot tell which the kernel uses",
                                off, word));
    const TrackedObject& o = found[0];
    auto it = objects_.find(word);
    if (it == objects_.end()) {
      format::TexObjectRecord r;
      r.id = static_cast<uint32_t>(plan_.textures.objects.size());
      r.handle = word;
      r.surface = o.surface;
      if (!describe(o, off, r)) return false;
      plan_.textures.objects.push_back(r);
      it = objects_.emplace(word, r.id).first;
    }
    plan_.textures.handles.push_back({off, it->second});
    return true;
  }

  // A level of a mipmapped array and that mipmapped array both in one launch share memory
  // that the replay would keep apart.
  bool check_aliasing() {
    for (const auto& [h, parent] : level_parents_)
      if (parent && arrays_.count({parent, true}))
        return refuse(fmt::format("the launch reaches mipmapped array {:#x} both whole and through its level array "
                                  "{:#x}: kerncap re-creates them apart and cannot replay writes through one seen "
                                  "through the other",
                                  parent, h));
    return true;
  }

 private:
  bool refuse(std::string why) {
    if (plan_.refusal.empty()) plan_.refusal = std::move(why);
    return false;
  }

  std::string what(const TrackedObject& o, uint32_t off) const {
    return fmt::format("the {} object {:#x} at parameter offset {}", o.surface ? "surface" : "texture", o.handle, off);
  }

  bool check_format(const TrackedObject& o, uint32_t off, uint32_t format, uint32_t channels) {
    if (format::array_format_bytes(format) == 0)
      return refuse(fmt::format("{} reads elements of format {:#x}, which kerncap does not replay (block-compressed, "
                                "NV12 and packed UNORM formats are not supported)",
                                what(o, off), format));
    if (channels != 1 && channels != 2 && channels != 4)
      return refuse(fmt::format("{} has {} channels (1, 2 or 4 expected)", what(o, off), channels));
    return true;
  }

  // The array record for a CUarray or CUmipmappedArray, added once.
  bool add_array(const TrackedObject& o, uint32_t off, uint64_t handle, bool mipmapped, uint32_t* id) {
    const auto key = std::make_pair(handle, mipmapped);
    if (const auto it = arrays_.find(key); it != arrays_.end()) {
      *id = it->second;
      return true;
    }
    const std::optional<TrackedArray> a = mipmapped ? tracker_.mipmapped(handle) : tracker_.array(handle);
    if (!a)
      return refuse(fmt::format("{} reads {} {:#x}, which kerncap did not see created (graphics interop, external "
                                "memory, or created before kerncap was loaded), so its contents cannot be captured",
                                what(o, off), mipmapped ? "CUDA mipmapped array" : "CUDA array", handle));
    if (!check_format(o, off, a->desc.format, a->desc.channels)) return false;
    if (a->desc.flags & ~format::kReplayableArrayFlags)
      return refuse(fmt::format("{} reads CUDA array {:#x} created with flags {:#x} (sparse, deferred mapping, depth "
                                "texture, color attachment or video arrays are not replayed)",
                                what(o, off), handle, a->desc.flags & ~format::kReplayableArrayFlags));
    if (a->desc.width == 0 || a->desc.width > format::kMaxArrayWidth || a->desc.height > format::kMaxArrayHeight ||
        a->desc.depth > format::kMaxArrayDepth || a->desc.levels > format::kMaxArrayLevels)
      return refuse(fmt::format("{} reads CUDA array {:#x} of {}x{}x{}, larger than kerncap replays", what(o, off),
                                handle, a->desc.width, a->desc.height, a->desc.depth));
    format::ArrayRecord r = a->desc;
    r.id = static_cast<uint32_t>(plan_.textures.arrays.size());
    r.handle = handle;
    plan_.textures.arrays.push_back(r);
    plan_.sources.push_back({handle, mipmapped});
    if (!mipmapped) level_parents_[handle] = a->parent;
    arrays_.emplace(key, r.id);
    *id = r.id;
    return true;
  }

  bool describe(const TrackedObject& o, uint32_t off, format::TexObjectRecord& r) {
    const CUDA_RESOURCE_DESC& res = o.resource;
    if (res.flags != 0)
      return refuse(fmt::format("{} has resource flags {:#x} (CUDA defines none)", what(o, off), res.flags));
    switch (res.resType) {
      case CU_RESOURCE_TYPE_ARRAY:
        r.resource = ResourceType::Array;
        if (!add_array(o, off, reinterpret_cast<uint64_t>(res.res.array.hArray), false, &r.array)) return false;
        if (o.surface && !(plan_.textures.arrays[r.array].flags & format::kArraySurfaceLdst))
          return refuse(fmt::format("{} is over CUDA array {:#x}, which was not created for surface load/store",
                                    what(o, off), reinterpret_cast<uint64_t>(res.res.array.hArray)));
        break;
      case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
        if (o.surface) return refuse(fmt::format("{} is over a mipmapped array (surfaces are over arrays)", what(o, off)));
        r.resource = ResourceType::MipmappedArray;
        if (!add_array(o, off, reinterpret_cast<uint64_t>(res.res.mipmap.hMipmappedArray), true, &r.array)) return false;
        break;
      case CU_RESOURCE_TYPE_LINEAR:
        if (o.surface) return refuse(fmt::format("{} is over linear memory (surfaces are over arrays)", what(o, off)));
        r.resource = ResourceType::Linear;
        r.address = res.res.linear.devPtr;
        r.format = static_cast<uint32_t>(res.res.linear.format);
        r.channels = res.res.linear.numChannels;
        r.size = res.res.linear.sizeInBytes;
        if (!check_format(o, off, r.format, r.channels)) return false;
        if (r.size == 0 || r.size > format::kMaxArrayBytes)
          return refuse(fmt::format("{} spans {} bytes of linear memory", what(o, off), r.size));
        plan_.memory.push_back({r.address, r.size});
        break;
      case CU_RESOURCE_TYPE_PITCH2D:
        if (o.surface) return refuse(fmt::format("{} is over pitched memory (surfaces are over arrays)", what(o, off)));
        r.resource = ResourceType::Pitch2D;
        r.address = res.res.pitch2D.devPtr;
        r.format = static_cast<uint32_t>(res.res.pitch2D.format);
        r.channels = res.res.pitch2D.numChannels;
        r.width = res.res.pitch2D.width;
        r.height = res.res.pitch2D.height;
        r.pitch = res.res.pitch2D.pitchInBytes;
        if (!check_format(o, off, r.format, r.channels)) return false;
        if (r.width == 0 || r.width > format::kMaxArrayWidth || r.height == 0 || r.height > format::kMaxArrayHeight ||
            r.pitch > (uint64_t{1} << 32))
          return refuse(fmt::format("{} is a pitch2D resource of {}x{} (pitch {}), outside what kerncap replays",
                                    what(o, off), r.width, r.height, r.pitch));
        plan_.memory.push_back({r.address, r.memory_bytes()});
        break;
      default:
        return refuse(fmt::format("{} has resource type {}, which kerncap does not replay", what(o, off),
                                  static_cast<int>(res.resType)));
    }
    if (o.texture) {
      const CUDA_TEXTURE_DESC& t = *o.texture;
      format::TextureDesc d;
      for (size_t i = 0; i < 3; ++i) d.address_mode[i] = static_cast<uint32_t>(t.addressMode[i]);
      d.filter_mode = static_cast<uint32_t>(t.filterMode);
      d.flags = t.flags;
      d.max_anisotropy = t.maxAnisotropy;
      d.mipmap_filter_mode = static_cast<uint32_t>(t.mipmapFilterMode);
      d.mipmap_level_bias = t.mipmapLevelBias;
      d.min_mipmap_level_clamp = t.minMipmapLevelClamp;
      d.max_mipmap_level_clamp = t.maxMipmapLevelClamp;
      for (size_t i = 0; i < 4; ++i) d.border_color[i] = t.borderColor[i];
      bool ok = d.filter_mode <= format::kMaxFilterMode && d.mipmap_filter_mode <= format::kMaxFilterMode &&
                !(d.flags & ~format::kTextureFlagsMask) && d.max_anisotropy <= format::kMaxAnisotropy;
      for (auto m : d.address_mode) ok = ok && m <= format::kMaxAddressMode;
      if (!ok) return refuse(fmt::format("{} has texture settings kerncap does not know (flags {:#x})", what(o, off), d.flags));
      r.texture = d;
    }
    if (o.view) {
      const CUDA_RESOURCE_VIEW_DESC& v = *o.view;
      if (r.resource != ResourceType::Array && r.resource != ResourceType::MipmappedArray)
        return refuse(fmt::format("{} has a resource view of linear memory", what(o, off)));
      format::ViewDesc d{static_cast<uint32_t>(v.format), v.width,          v.height,        v.depth,
                         v.firstMipmapLevel,               v.lastMipmapLevel, v.firstLayer, v.lastLayer};
      if (d.format > format::kMaxViewFormat || d.width > format::kMaxArrayWidth || d.height > format::kMaxArrayHeight ||
          d.depth > format::kMaxArrayDepth || d.first_level >= format::kMaxArrayLevels ||
          d.last_level >= format::kMaxArrayLevels || d.first_layer > format::kMaxArrayDepth ||
          d.last_layer > format::kMaxArrayDepth)
        return refuse(fmt::format("{} has a resource view kerncap does not replay (format {:#x})", what(o, off), d.format));
      r.view = d;
    }
    return true;
  }

  const TextureTracker& tracker_;
  TexturePlan& plan_;
  std::map<uint64_t, uint32_t> objects_;                    // handle -> object id
  std::map<std::pair<uint64_t, bool>, uint32_t> arrays_;    // (handle, mipmapped) -> array id
  std::map<uint64_t, uint64_t> level_parents_;              // plain arrays -> their mipmapped parent (0: none)
};

}  // namespace

TexturePlan plan_textures(std::span<const uint8_t> params, const std::vector<format::ParamSlot>& slots,
                          const TextureTracker& tracker) {
  TexturePlan plan;
  if (!tracker.has_objects()) return plan;
  Planner p(tracker, plan);
  for (uint32_t off : candidate_offsets(params, slots)) {
    uint64_t word = 0;
    std::memcpy(&word, params.data() + off, 8);
    if (word == 0) continue;
    if (!p.add(off, word)) return plan;
  }
  p.check_aliasing();
  return plan;
}

}  // namespace kerncap::capture
