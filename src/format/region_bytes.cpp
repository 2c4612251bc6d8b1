#include "format/region_bytes.hpp"

#include <algorithm>
#include <cstring>

namespace kerncap::format {

RegionBytes::RegionBytes(const Capture& c, const Region& r) : region_(r), file_(c.dir, r.file, "BEFORE memory") {
  if (!r.stored) return;
  uint64_t at = 0;
  for (const auto& s : *r.stored) {
    file_offsets_.push_back(at);
    at += s.size;
  }
}

void RegionBytes::read_at(uint64_t offset, void* data, uint64_t size) {
  auto* out = static_cast<uint8_t*>(data);
  if (!region_.stored) {
    file_.read_at(offset, out, size);
    if (on_file_bytes) on_file_bytes(out, size);
    return;
  }
  std::memset(out, fill(), size);
  const auto& runs = *region_.stored;
  const uint64_t end = offset + size;
  // The first run that ends after `offset` (runs are sorted and apart: check_regions).
  auto it = std::upper_bound(runs.begin(), runs.end(), offset,
                             [](uint64_t off, const StoredRun& s) { return off < s.offset + s.size; });
  for (; it != runs.end() && it->offset < end; ++it) {
    const uint64_t lo = std::max(offset, it->offset);
    const uint64_t hi = std::min(end, it->offset + it->size);
    const uint64_t file_off = file_offsets_[static_cast<size_t>(it - runs.begin())] + (lo - it->offset);
    file_.read_at(file_off, out + (lo - offset), hi - lo);
    if (on_file_bytes) on_file_bytes(out + (lo - offset), hi - lo);
  }
}

bool RegionBytes::unstored(uint64_t offset, uint64_t size) const {
  if (!region_.stored) return false;
  const auto& runs = *region_.stored;
  auto it = std::upper_bound(runs.begin(), runs.end(), offset,
                             [](uint64_t off, const StoredRun& s) { return off < s.offset + s.size; });
  return it == runs.end() || it->offset >= offset + size;
}

}  // namespace kerncap::format
