#pragma once
// A region's BEFORE bytes as the application had them, whether its file holds the whole
// region or only the runs that were not zero (a sparse region, Region::stored).
#include <cstdint>
#include <functional>
#include <string>

#include "format/capture_dir.hpp"
#include "format/manifest.hpp"

namespace kerncap::format {

class RegionBytes {
 public:
  RegionBytes(const Capture& c, const Region& r);
  // Fills data with the region's bytes [offset, offset + size); bytes a sparse region did
  // not store are zeros (kOmittedFill in an omitted region). Every byte taken from the file is also passed to on_file_bytes
  // when set, so sequential reads of the whole region see the file in order (its hash).
  void read_at(uint64_t offset, void* data, uint64_t size);
  // Whether [offset, offset + size) holds no stored byte (it is all fill()).
  bool unstored(uint64_t offset, uint64_t size) const;
  // What bytes that were not stored hold: 0, or kOmittedFill for an omitted region.
  uint8_t fill() const { return region_.omitted ? kOmittedFill : 0; }
  std::function<void(const uint8_t*, uint64_t)> on_file_bytes;

 private:
  const Region& region_;
  BlobReader file_;
  std::vector<uint64_t> file_offsets_;  // of each stored run
};

}  // namespace kerncap::format
