#include "format/region_bytes.hpp"

#include <algorithm>
#include <cstring>

#include "common/work_pool.hpp"

namespace kerncap::format {
namespace {

// The first range (sorted, apart) that ends after `offset`.
std::vector<StoredRun>::const_iterator first_after(const std::vector<StoredRun>& v, uint64_t offset) {
  return std::upper_bound(v.begin(), v.end(), offset,
                          [](uint64_t off, const StoredRun& s) { return off < s.offset + s.size; });
}

bool overlaps(const std::vector<StoredRun>& v, uint64_t offset, uint64_t size) {
  auto it = first_after(v, offset);
  return it != v.end() && it->offset < offset + size;
}

// Whether [offset, offset + size) lies wholly inside the ranges of v.
bool covered(const std::vector<StoredRun>& v, uint64_t offset, uint64_t size) {
  uint64_t at = offset;
  const uint64_t end = offset + size;
  for (auto it = first_after(v, offset); it != v.end() && at < end; ++it) {
    if (it->offset > at) return false;
    at = it->offset + it->size;
  }
  return at >= end;
}

}  // namespace

RegionBytes::RegionBytes(const Capture& c, const Region& r) : region_(r), source_(c.chunk_source()) {
  if (!r.stored) whole_.push_back({0, r.size});
  if (!r.file.empty()) file_.emplace(c.dir, r.file, "BEFORE memory");
  for (const auto& s : runs()) {
    run_at_.push_back(stored_size_);
    stored_size_ += s.size;
  }
  uint64_t at = 0;
  for (const auto& ch : r.chunks) {
    chunk_at_.push_back(at);
    at += ch.size;  // the manifest's rules: the chunks add up to the stored bytes
  }
}

void RegionBytes::read_at(uint64_t offset, void* data, uint64_t size) {
  auto* out = static_cast<uint8_t*>(data);
  const uint64_t end = offset + size;
  if (region_.stored || !region_.pruned.empty()) std::memset(out, fill(), size);
  for (auto it = first_after(region_.pruned, offset); it != region_.pruned.end() && it->offset < end; ++it) {
    const uint64_t lo = std::max(offset, it->offset), hi = std::min(end, it->offset + it->size);
    std::memset(out + (lo - offset), kOmittedFill, hi - lo);
  }
  const auto& rs = runs();
  for (auto it = first_after(rs, offset); it != rs.end() && it->offset < end; ++it) {
    const uint64_t lo = std::max(offset, it->offset);
    const uint64_t hi = std::min(end, it->offset + it->size);
    read_stored(run_at_[static_cast<size_t>(it - rs.begin())] + (lo - it->offset), out + (lo - offset), hi - lo);
    if (on_file_bytes) on_file_bytes(out + (lo - offset), hi - lo);
  }
}

std::optional<uint8_t> RegionBytes::uniform_fill(uint64_t offset, uint64_t size) const {
  if (overlaps(runs(), offset, size)) return std::nullopt;
  if (!overlaps(region_.pruned, offset, size) || fill() == kOmittedFill) return fill();
  if (covered(region_.pruned, offset, size)) return kOmittedFill;
  return std::nullopt;  // zeros and pruned bytes side by side
}

bool RegionBytes::unstored(uint64_t offset, uint64_t size) const { return !overlaps(runs(), offset, size); }

std::vector<RegionBytes::Segment> RegionBytes::segments() const {
  std::vector<Segment> out;
  auto add = [&](uint64_t offset, uint64_t size, std::optional<uint8_t> fill) {
    if (size == 0) return;
    if (!out.empty() && out.back().fill == fill && out.back().offset + out.back().size == offset) out.back().size += size;
    else out.push_back({offset, size, fill});
  };
  // Stored runs and pruned ranges are sorted and apart (the manifest's rules); what lies
  // between them holds fill().
  const auto& rs = runs();
  const auto& ps = region_.pruned;
  size_t a = 0, b = 0;
  uint64_t at = 0;
  while (a < rs.size() || b < ps.size()) {
    const bool run = b == ps.size() || (a < rs.size() && rs[a].offset < ps[b].offset);
    const StoredRun& s = run ? rs[a++] : ps[b++];
    const uint64_t lo = std::clamp(s.offset, at, region_.size), hi = std::clamp(s.offset + s.size, lo, region_.size);
    add(at, lo - at, fill());
    add(lo, hi - lo, run ? std::nullopt : std::optional<uint8_t>(kOmittedFill));
    at = hi;
  }
  add(at, region_.size - at, fill());
  return out;
}

void RegionBytes::read_stored(uint64_t at, uint8_t* out, uint64_t n) {
  if (file_) {
    file_->read_at(at, out, n);
    return;
  }
  const auto& chunks = region_.chunks;
  const uint64_t end = at + n;
  if (n == 0 || chunks.empty()) return;
  // The chunks the read touches: first .. last.
  const size_t first = static_cast<size_t>(std::upper_bound(chunk_at_.begin(), chunk_at_.end(), at) - chunk_at_.begin()) - 1;
  size_t last = first;
  while (last + 1 < chunks.size() && chunk_at_[last + 1] < end) ++last;
  // Chunks the read covers entirely are decoded in place; one it covers in part is decoded
  // whole into a buffer and the part copied: the first one (unless it is the chunk kept
  // from the read before) and the last one, which is kept for the read after (restore's
  // pieces need not end on chunk boundaries). All of them side by side.
  auto part = [&](size_t k) {
    const uint64_t lo = std::max(at, chunk_at_[k]), hi = std::min(end, chunk_at_[k] + chunks[k].size);
    return std::pair{lo, hi};
  };
  auto whole = [&](size_t k) {
    const auto [lo, hi] = part(k);
    return lo == chunk_at_[k] && hi == chunk_at_[k] + chunks[k].size;
  };
  std::vector<std::pair<size_t, uint8_t*>> jobs;  // chunk, where its bytes go
  std::vector<uint8_t> head, tail;
  for (size_t k = first; k <= last; ++k) {
    if (whole(k)) {
      jobs.emplace_back(k, out + (chunk_at_[k] - at));
    } else if (k == cached_) {
      continue;  // copied from cache_ below
    } else if (k == last) {
      tail.resize(chunks[k].size);
      jobs.emplace_back(k, tail.data());
    } else {
      head.resize(chunks[k].size);
      jobs.emplace_back(k, head.data());
    }
  }
  decode_parallel(jobs);
  auto copy_part = [&](size_t k, const uint8_t* src) {
    const auto [lo, hi] = part(k);
    std::memcpy(out + (lo - at), src + (lo - chunk_at_[k]), hi - lo);
  };
  if (!whole(first)) copy_part(first, first == cached_ ? cache_.data() : first == last ? tail.data() : head.data());
  if (last != first && !whole(last)) copy_part(last, last == cached_ ? cache_.data() : tail.data());
  if (!whole(last) && last != cached_) {
    cache_ = std::move(tail);
    cached_ = last;
  }
}

void RegionBytes::decode_parallel(const std::vector<std::pair<size_t, uint8_t*>>& jobs) {
  // Decompression runs at about a GB/s per thread: a large read (restore's 64 MiB pieces,
  // 16 chunks) decodes its chunks side by side on the process's pool.
  pool::parallel_for(jobs.size(), [&](size_t i) { read_chunk(source_, region_.chunks[jobs[i].first], jobs[i].second); });
}

}  // namespace kerncap::format
