#pragma once
// The footprint the prune tests give region 0 of a `size`-byte capture: reads [0, 8 KiB) and
// [600 KiB, 600 KiB + 100), writes [512 KiB, 520 KiB); what prune keeps follows from it.
#include <cstdint>
#include <utility>

#include "format/footprint.hpp"
#include "format/manifest.hpp"

namespace kerncap::testing {

inline format::Footprint prune_test_footprint(const format::Manifest& m, uint64_t size) {
  format::Footprint f;
  f.tool_version = "test";
  f.kernel = m.mangled_name;
  f.image_hash = m.image_hash;
  f.device_name = "test";
  format::RegionFootprint r;
  r.id = 0;
  r.base = m.regions[0].base;
  r.size = size;
  r.read = format::Bitmap(4, size);
  r.written = format::Bitmap(1, size);
  r.rbw = format::Bitmap(4, size);
  r.read.set_range(0, 8192 / 4);
  r.read.set_range(600 * 1024 / 4, 25);
  r.written.set_range(512 * 1024, 8192);
  f.regions.push_back(std::move(r));
  return f;
}

}  // namespace kerncap::testing
