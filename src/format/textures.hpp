#pragma once
// CUDA arrays, texture objects and surface objects in a capture (format version 4, the
// manifest's optional "textures" section). A kernel reaches them through 64-bit handles in
// its parameter bytes, which mean nothing in another process: the capture records what
// each handle stood for, and replay re-creates it and writes the new handle where the old
// one was (docs/capture.md, "Textures, surfaces and CUDA arrays").
//
// An array's contents are an ordinary region of kind MemKind::Array (no address in the
// application: its base is a made-up one at or above kArrayRegionBase): its levels back to back, each level its slices (depth or layers) back
// to back, each slice its rows packed (width * element bytes, no pitch). So BEFORE, AFTER,
// the chunk store and validation treat them as memory; replay keeps them in linear device
// memory and copies them into the re-created array before the launch and back after it.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kerncap::format {

// Bounds on what a capture may describe (untrusted input): every CUDA array fits them.
inline constexpr uint64_t kMaxArrayWidth = uint64_t{1} << 20;
inline constexpr uint64_t kMaxArrayHeight = uint64_t{1} << 20;
inline constexpr uint64_t kMaxArrayDepth = uint64_t{1} << 16;  // depth, or layers (x6 for cube maps)
inline constexpr uint32_t kMaxArrayLevels = 32;
inline constexpr uint64_t kMaxArrayBytes = uint64_t{1} << 40;
inline constexpr size_t kMaxTextureObjects = 4096;

// Regions of kind array are given made-up addresses from here up, one after the other: above
// every address a GPU or host pointer holds, so no word of the parameters or of memory (a
// small integer, a handle) is ever taken as pointing into one.
inline constexpr uint64_t kArrayRegionBase = 0xffff000000000000ull;

// CUDA_ARRAY3D_* flags kerncap re-creates (layered, surface load/store, cube map, gather).
inline constexpr uint32_t kArrayLayered = 0x01, kArraySurfaceLdst = 0x02, kArrayCubemap = 0x04,
                          kArrayTextureGather = 0x08;
inline constexpr uint32_t kReplayableArrayFlags = kArrayLayered | kArraySurfaceLdst | kArrayCubemap | kArrayTextureGather;

// CUarray_format values with their bytes per channel; 0 for a format kerncap does not
// replay (block-compressed, NV12, the packed UNORM formats).
uint32_t array_format_bytes(uint32_t cu_format);
// "float", "uint8", ...; "" for one array_format_bytes refuses.
std::string array_format_name(uint32_t cu_format);
// The CUarray_format of a name; nullopt for an unknown one.
std::optional<uint32_t> array_format_from_name(const std::string& name);

struct ArrayRecord {
  uint32_t id = 0;                       // objects refer to it by this
  uint32_t region = 0;                   // the MemKind::Array region holding its contents
  uint64_t handle = 0;                   // the CUarray / CUmipmappedArray in the application (messages)
  uint64_t width = 0, height = 0, depth = 0;  // as CUDA_ARRAY3D_DESCRIPTOR: 0 for an unused dimension
  uint32_t format = 0;                   // CUarray_format
  uint32_t channels = 1;                 // 1, 2 or 4
  uint32_t flags = 0;                    // CUDA_ARRAY3D_*
  uint32_t levels = 0;                   // 0: an array; n >= 1: a mipmapped array of n levels
};

// One level's copy extent: bytes per row, rows (>= 1), slices (>= 1).
struct LevelExtent {
  uint64_t row_bytes = 0, rows = 1, slices = 1;
  uint64_t bytes() const { return row_bytes * rows * slices; }
};
uint32_t level_count(const ArrayRecord& a);  // 1 for a plain array
LevelExtent level_extent(const ArrayRecord& a, uint32_t level);
// Bytes of all levels; the caller has checked the record against the bounds above.
uint64_t array_bytes(const ArrayRecord& a);

enum class ResourceType { Array, MipmappedArray, Linear, Pitch2D };
std::string to_string(ResourceType t);

// CUDA_TEXTURE_DESC, field by field.
struct TextureDesc {
  std::array<uint32_t, 3> address_mode{0, 0, 0};  // CUaddress_mode: wrap, clamp, mirror, border
  uint32_t filter_mode = 0;                        // CUfilter_mode: point, linear
  uint32_t flags = 0;                              // CU_TRSF_*
  uint32_t max_anisotropy = 0;
  uint32_t mipmap_filter_mode = 0;
  float mipmap_level_bias = 0, min_mipmap_level_clamp = 0, max_mipmap_level_clamp = 0;
  std::array<float, 4> border_color{0, 0, 0, 0};
  bool operator==(const TextureDesc&) const = default;
};
inline constexpr uint32_t kTextureFlagsMask = 0x01 | 0x02 | 0x10 | 0x20 | 0x40;  // CU_TRSF_*
inline constexpr uint32_t kMaxAddressMode = 3;
inline constexpr uint32_t kMaxFilterMode = 1;
inline constexpr uint32_t kMaxAnisotropy = 16;

// CUDA_RESOURCE_VIEW_DESC, field by field.
struct ViewDesc {
  uint32_t format = 0;  // CUresourceViewFormat
  uint64_t width = 0, height = 0, depth = 0;
  uint32_t first_level = 0, last_level = 0, first_layer = 0, last_layer = 0;
  bool operator==(const ViewDesc&) const = default;
};
inline constexpr uint32_t kMaxViewFormat = 0x22;  // CU_RES_VIEW_FORMAT_SIGNED_BC7... the last one

struct TexObjectRecord {
  uint32_t id = 0;
  uint64_t handle = 0;  // the CUtexObject / CUsurfObject in the application
  bool surface = false;
  ResourceType resource = ResourceType::Array;
  uint32_t array = 0;                         // Array, MipmappedArray: an ArrayRecord id
  uint64_t address = 0;                       // Linear, Pitch2D: a device address in the application
  uint32_t format = 0, channels = 1;          // Linear, Pitch2D
  uint64_t size = 0;                          // Linear: bytes
  uint64_t width = 0, height = 0, pitch = 0;  // Pitch2D: elements, rows, bytes per row
  std::optional<TextureDesc> texture;         // textures only
  std::optional<ViewDesc> view;               // textures of arrays only, when one was given
  // Bytes of device memory a Linear / Pitch2D resource spans (from `address`).
  uint64_t memory_bytes() const;
};

// A handle in the parameter bytes: the 8 bytes at `offset` hold object `object`'s handle.
struct HandleSlot {
  uint32_t offset = 0;
  uint32_t object = 0;
  bool operator==(const HandleSlot&) const = default;
};

struct Textures {
  std::vector<ArrayRecord> arrays;
  std::vector<TexObjectRecord> objects;
  std::vector<HandleSlot> handles;
  bool empty() const { return arrays.empty() && objects.empty() && handles.empty(); }
  const ArrayRecord* find_array(uint32_t id) const;
};

}  // namespace kerncap::format
