#pragma once
// BEFORE and AFTER of the CUDA arrays a launch reaches through texture and surface objects
// (texture_plan.hpp). An array has no address to scan or stage from: its levels are copied
// to host memory with cuMemcpy3D in the packed layout of format/textures.hpp, then stored
// as the bytes of a region of kind array, through the same chunk writer and AFTER blob as
// memory. Arrays are small next to device memory, so a whole array is held at once.
#include <cstdint>
#include <vector>

#include "capture/snapshot.hpp"
#include "capture/texture_plan.hpp"

namespace kerncap::capture {

// All levels of the array, packed (format::level_extent). Throws Error(Device).
std::vector<uint8_t> read_array(const format::ArrayRecord& a, const TexturePlan::Source& src);

// BEFORE: the whole of `bytes` as st.region's chunks; the change-detection hashes and the
// hash of the stored bytes are recorded as for memory.
void snapshot_before_bytes(RegionState& st, const std::vector<uint8_t>& bytes, format::ChunkWriter& chunks,
                           uint32_t chunk);
// AFTER: appends the chunks of `now` whose hash differs from BEFORE's.
void snapshot_after_bytes(const RegionState& st, const std::vector<uint8_t>& now, format::BlobWriter& after,
                          uint32_t chunk, std::vector<format::AfterRun>& runs);

}  // namespace kerncap::capture
