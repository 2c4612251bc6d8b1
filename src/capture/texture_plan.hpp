#pragma once
// Which of a launch's parameter words are texture or surface object handles, what each
// stands for, and what the capture must then read: the arrays' contents and the device
// memory of linear and pitch2D textures. A word is taken as a handle when it equals a live
// object's handle, as a word is taken as a pointer when it points into a tracked range
// (closure.hpp): in any 8-byte aligned word of a parameter of 8 bytes or more, by-value
// structs included. Pure: unit tested with a tracker fed fake callbacks.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "capture/texture_tracker.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

struct TexturePlan {
  // Arrays (region ids still to be given), objects and handle slots, for the manifest.
  format::Textures textures;
  // Per textures.arrays[i]: what to read its contents from.
  struct Source {
    uint64_t handle = 0;    // a CUarray, or a CUmipmappedArray when mipmapped
    bool mipmapped = false;
  };
  std::vector<Source> sources;
  // Device memory linear and pitch2D textures read: [address, address + bytes). The
  // capture keeps the regions holding them (roots of the closure).
  struct Span {
    uint64_t address = 0, bytes = 0;
  };
  std::vector<Span> memory;
  // Not empty: the launch cannot be replayed faithfully, and why (the capture is refused).
  std::string refusal;
};

// `slots`: the parameter layout (empty: unknown, every aligned word of `params` is looked at).
TexturePlan plan_textures(std::span<const uint8_t> params, const std::vector<format::ParamSlot>& slots,
                          const TextureTracker& tracker);

}  // namespace kerncap::capture
