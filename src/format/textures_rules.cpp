// The rules between the "textures" section and the rest of the manifest, checked before
// replay allocates an array or writes a handle.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/manifest.hpp"
#include "format/textures_json.hpp"

namespace kerncap::format {
namespace {

[[noreturn]] void bad(const std::string& what) {
  input_error(fmt::format("capture manifest: {}; the capture is damaged or was not written by kerncap; extract it "
                          "again",
                          what));
}

void check_array(const ArrayRecord& a, size_t i) {
  // The reader bounded every dimension; these are the shapes CUDA itself allows.
  if ((a.flags & kArrayCubemap) && (a.width != a.height || a.depth == 0 || a.depth % 6))
    bad(fmt::format("textures.arrays[{}] is a cube map of {}x{}x{} (faces must be square, depth a multiple of 6)", i,
                    a.width, a.height, a.depth));
  if ((a.flags & kArrayLayered) && a.depth == 0)
    bad(fmt::format("textures.arrays[{}] is layered without layers (depth 0)", i));
  if (!(a.flags & (kArrayLayered | kArrayCubemap)) && a.height == 0 && a.depth != 0)
    bad(fmt::format("textures.arrays[{}] has a depth ({}) but no height", i, a.depth));
  if (a.levels) {
    uint64_t largest = std::max(a.width, a.height);
    if (!(a.flags & (kArrayLayered | kArrayCubemap))) largest = std::max(largest, a.depth);
    uint32_t possible = 1;
    while (largest >> possible) ++possible;
    if (a.levels > possible)
      bad(fmt::format("textures.arrays[{}] has {} mipmap levels; its largest dimension ({}) allows {}", i, a.levels,
                      largest, possible));
  }
  if (array_bytes(a) > kMaxArrayBytes)
    bad(fmt::format("textures.arrays[{}] holds {} bytes, more than {}", i, array_bytes(a), kMaxArrayBytes));
}

// A linear or pitch2D resource: its bytes inside one captured region of device memory.
void check_memory(const Manifest& m, const TexObjectRecord& o, size_t i) {
  const uint32_t elem = array_format_bytes(o.format) * o.channels;
  if (o.resource == ResourceType::Pitch2D && o.pitch < o.width * elem)
    bad(fmt::format("textures.objects[{}] has a pitch of {} bytes, less than a row ({} x {} bytes)", i, o.pitch,
                    o.width, elem));
  const uint64_t n = o.memory_bytes();
  if (o.address > UINT64_MAX - n)
    bad(fmt::format("textures.objects[{}] (address + bytes) overflows 64 bits", i));
  for (const auto& r : m.regions) {
    if (r.kind == MemKind::Array || r.kind == MemKind::Global) continue;
    if (o.address >= r.base && o.address + n <= r.base + r.size) {
      if (r.omitted)
        bad(fmt::format("textures.objects[{}] reads region {}, which the capture omitted", i, r.id));
      return;
    }
  }
  bad(fmt::format("textures.objects[{}] reads {} bytes at {}, which no captured region holds", i, n,
                  hex_addr(o.address)));
}

}  // namespace

void check_textures(const Manifest& m) {
  const Textures& t = m.textures;
  std::map<uint32_t, const ArrayRecord*> arrays;
  std::set<uint32_t> array_regions;
  for (size_t i = 0; i < t.arrays.size(); ++i) {
    const ArrayRecord& a = t.arrays[i];
    if (!arrays.emplace(a.id, &a).second) bad(fmt::format("textures.arrays[{}] repeats array id {}", i, a.id));
    check_array(a, i);
    const Region* r = m.find_region(a.region);
    if (!r || r->kind != MemKind::Array)
      bad(fmt::format("textures.arrays[{}] keeps its contents in region {}, which is not a region of kind array", i,
                      a.region));
    if (!array_regions.insert(a.region).second)
      bad(fmt::format("textures.arrays[{}] shares region {} with another array", i, a.region));
    if (r->size != array_bytes(a))
      bad(fmt::format("textures.arrays[{}] ({}x{}x{}, {} x {} channels, {} levels) holds {} bytes but its region {} "
                      "has {}",
                      i, a.width, a.height, a.depth, array_format_name(a.format), a.channels, level_count(a),
                      array_bytes(a), r->id, r->size));
    if (r->omitted) bad(fmt::format("textures.arrays[{}]: its region {} is omitted", i, r->id));
  }
  for (const auto& r : m.regions)
    if (r.kind == MemKind::Array && !array_regions.count(r.id))
      bad(fmt::format("region {} is of kind array but no textures.arrays entry describes it", r.id));

  std::set<uint32_t> object_ids;
  for (size_t i = 0; i < t.objects.size(); ++i) {
    const TexObjectRecord& o = t.objects[i];
    if (!object_ids.insert(o.id).second) bad(fmt::format("textures.objects[{}] repeats object id {}", i, o.id));
    const bool on_array = o.resource == ResourceType::Array || o.resource == ResourceType::MipmappedArray;
    if (on_array) {
      const auto it = arrays.find(o.array);
      if (it == arrays.end()) bad(fmt::format("textures.objects[{}] refers to array {}, which is not in the capture", i, o.array));
      const bool mip = it->second->levels > 0;
      if (mip != (o.resource == ResourceType::MipmappedArray))
        bad(fmt::format("textures.objects[{}] is a {} resource over array {}, which is {}a mipmapped array", i,
                        to_string(o.resource), o.array, mip ? "" : "not "));
    } else {
      check_memory(m, o, i);
    }
    if (o.surface) {
      if (o.resource != ResourceType::Array)
        bad(fmt::format("textures.objects[{}] is a surface over a {} resource (surfaces are over arrays)", i,
                        to_string(o.resource)));
      if (!(arrays.at(o.array)->flags & kArraySurfaceLdst))
        bad(fmt::format("textures.objects[{}] is a surface over array {}, which was not created for surface "
                        "load/store",
                        i, o.array));
      if (o.texture || o.view) bad(fmt::format("textures.objects[{}] is a surface with a texture or view description", i));
    } else {
      if (!o.texture) bad(fmt::format("textures.objects[{}] is a texture without its texture description", i));
      if (o.view && !on_array) bad(fmt::format("textures.objects[{}] has a view of a {} resource", i, to_string(o.resource)));
    }
  }

  std::set<uint32_t> offsets;
  for (size_t i = 0; i < t.handles.size(); ++i) {
    const HandleSlot& h = t.handles[i];
    if (h.offset % 8 || uint64_t{h.offset} + 8 > m.params_size)
      bad(fmt::format("textures.handles[{}] (offset {}) is not an aligned 8-byte word of the {}-byte parameter buffer",
                      i, h.offset, m.params_size));
    if (!offsets.insert(h.offset).second) bad(fmt::format("textures.handles[{}] repeats offset {}", i, h.offset));
    if (!object_ids.count(h.object)) bad(fmt::format("textures.handles[{}] names object {}, which is not in the capture", i, h.object));
  }
}

}  // namespace kerncap::format
