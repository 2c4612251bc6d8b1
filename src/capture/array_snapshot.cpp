#include "capture/array_snapshot.hpp"

#include <xxhash.h>

#include <algorithm>

#include "common/driver.hpp"
#include "common/error.hpp"

namespace kerncap::capture {

std::vector<uint8_t> read_array(const format::ArrayRecord& a, const TexturePlan::Source& src) {
  std::vector<uint8_t> out(format::array_bytes(a));
  uint64_t at = 0;
  for (uint32_t l = 0; l < format::level_count(a); ++l) {
    CUarray level = reinterpret_cast<CUarray>(src.handle);
    if (src.mipmapped) KC_CU(cuMipmappedArrayGetLevel(&level, reinterpret_cast<CUmipmappedArray>(src.handle), l));
    const format::LevelExtent e = format::level_extent(a, l);
    CUDA_MEMCPY3D c{};
    c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c.srcArray = level;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = out.data() + at;
    c.dstPitch = e.row_bytes;
    c.dstHeight = e.rows;
    c.WidthInBytes = e.row_bytes;
    c.Height = e.rows;
    c.Depth = e.slices;
    KC_CU(cuMemcpy3D(&c));
    at += e.bytes();
  }
  return out;
}

void snapshot_before_bytes(RegionState& st, const std::vector<uint8_t>& bytes, format::ChunkWriter& chunks,
                           uint32_t chunk) {
  format::RegionChunker out(chunks);
  if (!bytes.empty()) out.add(0, bytes.data(), bytes.size());
  st.hashes.clear();
  for (uint64_t c = 0; c < bytes.size(); c += chunk)
    st.hashes.push_back(XXH3_64bits(bytes.data() + c, std::min<uint64_t>(chunk, bytes.size() - c)));
  st.region.xxh64 = XXH64(bytes.data(), bytes.size(), 0);
  st.tickets = out.finish();
}

void snapshot_after_bytes(const RegionState& st, const std::vector<uint8_t>& now, format::BlobWriter& after,
                          uint32_t chunk, std::vector<format::AfterRun>& runs) {
  size_t index = 0;
  for (uint64_t c = 0; c < now.size(); c += chunk, ++index) {
    const uint64_t len = std::min<uint64_t>(chunk, now.size() - c);
    if (index < st.hashes.size() && XXH3_64bits(now.data() + c, len) == st.hashes[index]) continue;
    if (!runs.empty() && runs.back().region == st.region.id && runs.back().offset + runs.back().size == c &&
        runs.back().file_offset + runs.back().size == after.offset())
      runs.back().size += len;
    else
      runs.push_back({st.region.id, c, len, after.offset()});
    after.write(now.data() + c, len);
  }
}

}  // namespace kerncap::capture
