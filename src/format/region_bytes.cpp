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
  read_pieces({{offset, size, static_cast<uint8_t*>(data)}});
}

void RegionBytes::read_pieces(const std::vector<Piece>& pieces) {
  const auto& rs = runs();
  std::vector<Span> spans;  // the stored bytes the pieces hold, in order
  for (const Piece& p : pieces) {
    const uint64_t end = p.offset + p.size;
    // Bytes between stored runs hold fill(), pruned ones kOmittedFill: only those are set,
    // not the whole piece (a piece is mostly stored bytes).
    uint64_t at = p.offset;
    auto fill_to = [&](uint64_t to) {
      for (auto it = first_after(region_.pruned, at); it != region_.pruned.end() && it->offset < to; ++it) {
        const uint64_t lo = std::max(at, it->offset), hi = std::min(to, it->offset + it->size);
        if (lo > at) std::memset(p.out + (at - p.offset), fill(), lo - at);
        std::memset(p.out + (lo - p.offset), kOmittedFill, hi - lo);
        at = hi;
      }
      if (to > at) std::memset(p.out + (at - p.offset), fill(), to - at);
      at = std::max(at, to);
    };
    for (auto it = first_after(rs, p.offset); it != rs.end() && it->offset < end; ++it) {
      const uint64_t lo = std::max(p.offset, it->offset), hi = std::min(end, it->offset + it->size);
      fill_to(lo);
      spans.push_back({run_at_[static_cast<size_t>(it - rs.begin())] + (lo - it->offset), hi - lo, p.out + (lo - p.offset)});
      at = hi;
    }
    fill_to(end);
  }
  read_spans(spans);
  if (on_file_bytes)
    for (const Span& s : spans) on_file_bytes(s.out, s.size);
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

void RegionBytes::read_stored(uint64_t at, uint8_t* out, uint64_t n) { read_spans({{at, n, out}}); }

void RegionBytes::read_spans(const std::vector<Span>& spans) {
  if (file_) {
    for (const Span& s : spans) file_->read_at(s.at, s.out, s.size);
    return;
  }
  const auto& chunks = region_.chunks;
  // Each chunk the spans touch, with the parts of it they want (spans are in stored order,
  // so chunks come in order and a chunk's parts are next to each other).
  struct Part {
    uint64_t lo, hi;  // in stored bytes
    uint8_t* out;
  };
  struct Use {
    size_t k;
    std::vector<Part> parts;
  };
  std::vector<Use> uses;
  for (const Span& s : spans) {
    if (s.size == 0 || chunks.empty()) continue;
    const uint64_t end = s.at + s.size;
    size_t k = static_cast<size_t>(std::upper_bound(chunk_at_.begin(), chunk_at_.end(), s.at) - chunk_at_.begin()) - 1;
    for (; k < chunks.size() && chunk_at_[k] < end; ++k) {
      const uint64_t lo = std::max(s.at, chunk_at_[k]), hi = std::min(end, chunk_at_[k] + chunks[k].size);
      if (uses.empty() || uses.back().k != k) uses.push_back({k, {}});
      uses.back().parts.push_back({lo, hi, s.out + (lo - s.at)});
    }
  }
  // A chunk one part covers entirely is decoded in place; any other is decoded whole into a
  // buffer and its parts copied (the chunk kept from the read before needs no decode, and
  // the last one is kept for the read after: restore's and validation's pieces need not end
  // on chunk boundaries). All side by side on the pool, a bounded number of buffers at a time.
  constexpr size_t kGroup = 64;
  for (size_t g = 0; g < uses.size(); g += kGroup) {
    const size_t g_end = std::min(uses.size(), g + kGroup);
    std::vector<std::vector<uint8_t>> bufs(g_end - g);
    std::vector<bool> in_place(g_end - g);
    std::vector<std::pair<size_t, uint8_t*>> jobs;
    for (size_t u = g; u < g_end; ++u) {
      const Use& use = uses[u];
      in_place[u - g] = use.parts.size() == 1 && use.parts[0].lo == chunk_at_[use.k] &&
                        use.parts[0].hi == chunk_at_[use.k] + chunks[use.k].size;
      if (in_place[u - g]) {
        jobs.emplace_back(use.k, use.parts[0].out);
      } else if (use.k != cached_) {
        bufs[u - g].resize(chunks[use.k].size);
        jobs.emplace_back(use.k, bufs[u - g].data());
      }
    }
    decode_parallel(jobs);
    for (size_t u = g; u < g_end; ++u) {
      const Use& use = uses[u];
      if (in_place[u - g]) continue;
      const uint8_t* src = bufs[u - g].empty() ? cache_.data() : bufs[u - g].data();
      for (const Part& part : use.parts) std::memcpy(part.out, src + (part.lo - chunk_at_[use.k]), part.hi - part.lo);
    }
    if (g_end == uses.size() && !bufs[g_end - 1 - g].empty()) {
      cache_ = std::move(bufs[g_end - 1 - g]);
      cached_ = uses.back().k;
    }
  }
}

void RegionBytes::decode_parallel(const std::vector<std::pair<size_t, uint8_t*>>& jobs) {
  // Decompression runs at about a GB/s per thread: a large read (restore's 64 MiB pieces,
  // 16 chunks) decodes its chunks side by side on the process's pool.
  pool::parallel_for(jobs.size(), [&](size_t i) { read_chunk(source_, region_.chunks[jobs[i].first], jobs[i].second); });
}

}  // namespace kerncap::format
