#pragma once
// CUDA arrays, mipmapped arrays, texture objects and surface objects the application
// creates and destroys, seen through CUPTI driver-API callbacks at API exit (successful
// calls only). The runtime's cudaMallocArray/cudaMalloc3DArray/cudaCreateTextureObject/...
// end in these driver calls. Descriptors are copied at creation: the callback's pointers
// are valid only during the call. Arrays made some other way (graphics interop, external
// memory, before kerncap was loaded) are unknown here, and a launch that reaches one is
// refused at capture (texture_plan.hpp).
#include <cuda.h>
#include <cupti.h>

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "format/textures.hpp"

namespace kerncap::capture {

struct TrackedArray {
  uint64_t handle = 0;
  // Shape, format, flags and levels (id and region are the capture's to give).
  format::ArrayRecord desc;
  // A level of a mipmapped array (cuMipmappedArrayGetLevel): the mipmapped array and level.
  uint64_t parent = 0;
  uint32_t level = 0;
};

struct TrackedObject {
  uint64_t handle = 0;
  bool surface = false;
  CUDA_RESOURCE_DESC resource{};
  std::optional<CUDA_TEXTURE_DESC> texture;     // textures only
  std::optional<CUDA_RESOURCE_VIEW_DESC> view;  // when the application gave one
};

class TextureTracker {
 public:
  static const std::vector<CUpti_CallbackId>& callback_ids();
  // Handles one driver-API callback (API exit only). Returns true when it was one of ours.
  bool on_driver_api(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);

  std::optional<TrackedArray> array(uint64_t handle) const;      // CUarray (levels included)
  std::optional<TrackedArray> mipmapped(uint64_t handle) const;  // CUmipmappedArray
  // Every live texture and surface object with this handle value (two when a texture and a
  // surface share a value: the caller cannot tell which a word means).
  std::vector<TrackedObject> objects(uint64_t handle) const;
  bool has_objects() const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, TrackedArray> arrays_, mipmapped_;
  std::map<uint64_t, TrackedObject> textures_, surfaces_;
};

}  // namespace kerncap::capture
