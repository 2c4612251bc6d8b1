// The rules between the "textures" section and the rest of the manifest, checked before
// replay allocates an array or writes a handle.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

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

// The regions a linear or pitch2D resource may lie in (not arrays, not module globals), by
// base: one bisection per texture object, not a pass over every region (a crafted capture
// may list hundreds of thousands of both). Regions with bytes do not overlap (check_regions).
std::vector<const Region*> memory_by_base(const Manifest& m) {
  std::vector<const Region*> v;
  for (const auto& r : m.regions)
    if (r.kind != MemKind::Array && r.kind != MemKind::Global && r.size) v.push_back(&r);
  std::sort(v.begin(), v.end(), [](const Region* a, const Region* b) { return a->base < b->base; });
  return v;
}

// A linear or pitch2D resource: its bytes inside one captured region of device memory.
void check_memory(const std::vector<const Region*>& memory, const TexObjectRecord& o, size_t i) {
  const uint32_t elem = array_format_bytes(o.format) * o.channels;
  if (o.resource == ResourceType::Pitch2D && o.pitch < o.width * elem)
    bad(fmt::format("textures.objects[{}] has a pitch of {} bytes, less than a row ({} x {} bytes)", i, o.pitch,
                    o.width, elem));
  const uint64_t n = o.memory_bytes();
  if (o.address > UINT64_MAX - n)
    bad(fmt::format("textures.objects[{}] (address + bytes) overflows 64 bits", i));
  // The one region that starts at or below the address.
  auto it = std::upper_bound(memory.begin(), memory.end(), o.address,
                             [](uint64_t a, const Region* r) { return a < r->base; });
  if (it != memory.begin()) {
    const Region& r = **std::prev(it);
    if (o.address + n <= r.base + r.size) {
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
  std::unordered_map<uint32_t, const Region*> by_id;  // ids are unique (check_regions)
  for (const auto& r : m.regions) by_id.emplace(r.id, &r);
  for (size_t i = 0; i < t.arrays.size(); ++i) {
    const ArrayRecord& a = t.arrays[i];
    if (!arrays.emplace(a.id, &a).second) bad(fmt::format("textures.arrays[{}] repeats array id {}", i, a.id));
    check_array(a, i);
    const auto found = by_id.find(a.region);
    const Region* r = found == by_id.end() ? nullptr : found->second;
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
  const std::vector<const Region*> memory = t.objects.empty() ? std::vector<const Region*>{} : memory_by_base(m);
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
      check_memory(memory, o, i);
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
