#pragma once
// Replay's side of CUDA arrays, texture and surface objects (format/textures.hpp): the
// arrays re-created with the captured shape, format and flags; their contents kept in the
// linear device memory of their region (restored, poisoned, compared like any region) and
// copied into the array before a launch and back after it; the objects re-created over
// them (or over restored memory, translated); each captured handle in the parameter bytes
// replaced by the new one.
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "format/manifest.hpp"

namespace kerncap::replay {

class ReplayTextures {
 public:
  ReplayTextures() = default;
  ~ReplayTextures();
  ReplayTextures(const ReplayTextures&) = delete;
  ReplayTextures& operator=(const ReplayTextures&) = delete;

  // Creates arrays and objects. `region_address(i)`: the replay address of region i
  // (manifest order); `translate`: a captured device address to its replay address.
  // Throws Error(Device) (the driver refused) after giving back what it made.
  void create(const format::Manifest& m, const std::function<uint64_t(size_t)>& region_address,
              const std::function<uint64_t(uint64_t)>& translate);
  bool empty() const { return arrays_.empty() && objects_.empty(); }
  // Region contents into the arrays (after a restore).
  void upload() const;
  // Arrays written through surfaces back into their regions (after a launch has finished).
  void download() const;
  // Writes the new handles over the captured ones in `params`.
  void patch(std::vector<uint8_t>& params) const;
  void release() noexcept;

 private:
  struct Array {
    format::ArrayRecord record;
    CUarray array = nullptr;             // a plain array
    CUmipmappedArray mipmapped = nullptr;
    uint64_t buffer = 0;                 // its region's replay address
    bool written = false;                // a surface is over it: AFTER may differ
  };
  void copy(const Array& a, bool to_array) const;

  std::vector<Array> arrays_;
  struct Object {
    uint64_t handle = 0;
    bool surface = false;
  };
  std::vector<Object> objects_;  // by object id order of the manifest
  std::vector<format::HandleSlot> handles_;
  std::vector<uint32_t> object_ids_;
};

}  // namespace kerncap::replay
