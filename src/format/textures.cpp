#include "format/textures.hpp"

#include <algorithm>
#include <utility>

namespace kerncap::format {
namespace {

struct FormatInfo {
  uint32_t cu;  // CUarray_format
  const char* name;
  uint32_t bytes;
};
// CU_AD_FORMAT_UNSIGNED_INT8 ... CU_AD_FORMAT_FLOAT: the formats every array API takes.
constexpr std::array<FormatInfo, 8> kFormats{{
    {0x01, "uint8", 1},
    {0x02, "uint16", 2},
    {0x03, "uint32", 4},
    {0x08, "int8", 1},
    {0x09, "int16", 2},
    {0x0a, "int32", 4},
    {0x10, "half", 2},
    {0x20, "float", 4},
}};

}  // namespace

uint32_t array_format_bytes(uint32_t cu_format) {
  for (const auto& f : kFormats)
    if (f.cu == cu_format) return f.bytes;
  return 0;
}

std::string array_format_name(uint32_t cu_format) {
  for (const auto& f : kFormats)
    if (f.cu == cu_format) return f.name;
  return "";
}

std::optional<uint32_t> array_format_from_name(const std::string& name) {
  for (const auto& f : kFormats)
    if (name == f.name) return f.cu;
  return std::nullopt;
}

uint32_t level_count(const ArrayRecord& a) { return std::max<uint32_t>(1, a.levels); }

LevelExtent level_extent(const ArrayRecord& a, uint32_t level) {
  const auto shrink = [&](uint64_t n) { return std::max<uint64_t>(1, n >> level); };
  LevelExtent e;
  e.row_bytes = shrink(a.width) * array_format_bytes(a.format) * a.channels;
  e.rows = a.height ? shrink(a.height) : 1;
  // Layers and cube faces are not mip levels: only a 3D array's depth shrinks.
  if (a.depth) e.slices = a.flags & (kArrayLayered | kArrayCubemap) ? a.depth : shrink(a.depth);
  return e;
}

uint64_t array_bytes(const ArrayRecord& a) {
  uint64_t n = 0;
  for (uint32_t l = 0; l < level_count(a); ++l) n += level_extent(a, l).bytes();
  return n;
}

std::string to_string(ResourceType t) {
  switch (t) {
    case ResourceType::Array: return "array";
    case ResourceType::MipmappedArray: return "mipmapped_array";
    case ResourceType::Linear: return "linear";
    case ResourceType::Pitch2D: return "pitch2d";
  }
  return "array";
}

uint64_t TexObjectRecord::memory_bytes() const {
  if (resource == ResourceType::Linear) return size;
  if (resource == ResourceType::Pitch2D) return height ? pitch * (height - 1) + width * array_format_bytes(format) * channels : 0;
  return 0;
}

const ArrayRecord* Textures::find_array(uint32_t id) const {
  for (const auto& a : arrays)
    if (a.id == id) return &a;
  return nullptr;
}

}  // namespace kerncap::format
