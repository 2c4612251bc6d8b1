#include "format/region_bytes.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <thread>

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

void RegionBytes::read_stored(uint64_t at, uint8_t* out, uint64_t n) {
  if (file_) {
    file_->read_at(at, out, n);
    return;
  }
  const auto& chunks = region_.chunks;
  const uint64_t end = at + n;
  // The first chunk that ends after `at`.
  size_t k = static_cast<size_t>(std::upper_bound(chunk_at_.begin(), chunk_at_.end(), at) - chunk_at_.begin()) - 1;
  std::vector<size_t> whole;  // chunks the read covers entirely: decoded in place, in parallel
  uint64_t whole_at = 0;
  for (; k < chunks.size() && chunk_at_[k] < end; ++k) {
    const uint64_t lo = std::max(at, chunk_at_[k]), hi = std::min(end, chunk_at_[k] + chunks[k].size);
    if (lo == chunk_at_[k] && hi == chunk_at_[k] + chunks[k].size && k != cached_) {
      if (whole.empty()) whole_at = lo;
      whole.push_back(k);
      continue;
    }
    if (!whole.empty()) {
      decode_parallel(whole, out + (whole_at - at), whole_at);
      whole.clear();
    }
    if (k != cached_) {
      cache_.resize(chunks[k].size);
      cached_ = SIZE_MAX;
      read_chunk(source_, chunks[k], cache_.data());
      cached_ = k;
    }
    std::memcpy(out + (lo - at), cache_.data() + (lo - chunk_at_[k]), hi - lo);
  }
  if (!whole.empty()) decode_parallel(whole, out + (whole_at - at), whole_at);
}

void RegionBytes::decode_parallel(const std::vector<size_t>& ks, uint8_t* out, uint64_t at) {
  // Decompression runs at well under a GB/s per thread: a large read (restore's 64 MiB
  // pieces, 16 chunks) decodes its chunks side by side.
  const unsigned threads = std::min<unsigned>(static_cast<unsigned>(ks.size()),
                                              std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  auto one = [&](size_t i) { read_chunk(source_, region_.chunks[ks[i]], out + (chunk_at_[ks[i]] - at)); };
  if (threads <= 1) {
    for (size_t i = 0; i < ks.size(); ++i) one(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; !failed && (i = next++) < ks.size();) {
        try {
          one(i);
        } catch (...) {
          if (!failed.exchange(true)) failure = std::current_exception();
        }
      }
    });
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kerncap::format
