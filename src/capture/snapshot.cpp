#include "capture/snapshot.hpp"

#include <xxhash.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "format/chunk_store.hpp"

namespace kerncap::capture {

Progress::Progress(std::string what, uint64_t total, bool enabled)
    : what_(std::move(what)), total_(total), enabled_(enabled) {
  start_ = last_ = std::chrono::steady_clock::now();
}

void Progress::add(uint64_t n) {
  done_ += n;
  auto now = std::chrono::steady_clock::now();
  if (!enabled_ || now - last_ < std::chrono::seconds(1)) return;
  last_ = now;
  log::info("{}: {} of {} ({:.0f}%)", what_, human_bytes(done_), human_bytes(total_),
            total_ ? 100.0 * static_cast<double>(done_) / static_cast<double>(total_) : 100.0);
}

void Progress::done() {
  if (!enabled_) return;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  log::info("{}: {} in {:.2f} s", what_, human_bytes(done_), s);
}

Stager::Stager(uint64_t bytes) : bytes_(bytes) {
  void* p = nullptr;
  KC_CU(cuMemHostAlloc(&p, bytes, 0));
  buf_ = static_cast<uint8_t*>(p);
}

Stager::~Stager() {
  if (buf_) driver().cuMemFreeHost(buf_);
}

void Stager::read(uint64_t addr, uint64_t size, format::MemKind kind, const Sink& sink) {
  const bool host = kind == format::MemKind::HostMapped || kind == format::MemKind::HostRegistered;
  for (uint64_t off = 0; off < size;) {
    uint64_t n = std::min(bytes_, size - off);
    if (host) {
      sink(reinterpret_cast<const uint8_t*>(addr + off), n, off);
    } else {
      KC_CU(cuMemcpyDtoH(buf_, addr + off, n));
      sink(buf_, n, off);
    }
    off += n;
  }
}

void snapshot_before(Stager& stager, RegionState& st, format::ChunkWriter& chunks, uint32_t chunk,
                     Progress& progress) {
  format::RegionChunker out(chunks);
  XXH64_state_t* whole = XXH64_createState();
  XXH64_reset(whole, 0);
  st.hashes.clear();
  st.hashes.reserve((st.region.size + chunk - 1) / chunk);
  // Staging pieces are multiples of the chunk size, so chunks never straddle pieces.
  stager.read(st.address, st.region.size, st.region.kind, [&](const uint8_t* data, uint64_t n, uint64_t off) {
    out.add(off, data, n);
    XXH64_update(whole, data, n);
    for (uint64_t c = 0; c < n; c += chunk) st.hashes.push_back(XXH3_64bits(data + c, std::min<uint64_t>(chunk, n - c)));
    progress.add(n);
  });
  st.region.xxh64 = XXH64_digest(whole);
  XXH64_freeState(whole);
  st.tickets = out.finish();
}

void snapshot_before_sparse(Stager& stager, RegionState& st, const std::vector<ByteRun>& runs,
                            format::ChunkWriter& chunks, Progress& progress) {
  format::RegionChunker out(chunks);
  XXH64_state_t* whole = XXH64_createState();
  XXH64_reset(whole, 0);
  st.region.stored.emplace();
  uint64_t stored = 0;
  for (const auto& r : runs) {
    stager.read(st.address + r.offset, r.size, st.region.kind, [&](const uint8_t* data, uint64_t n, uint64_t off) {
      out.add(r.offset + off, data, n);
      XXH64_update(whole, data, n);
    });
    st.region.stored->push_back({r.offset, r.size});
    stored += r.size;
  }
  progress.add(st.region.size);
  st.region.xxh64 = XXH64_digest(whole);
  XXH64_freeState(whole);
  st.tickets = out.finish();
  log::debug("region {}: {} of {} stored in {} runs (the rest is zeros)", st.region.id, human_bytes(stored),
             human_bytes(st.region.size), runs.size());
}

void snapshot_after_changed(Stager& stager, const RegionState& st, const std::vector<ByteRun>& changed,
                            format::BlobWriter& after, std::vector<format::AfterRun>& runs, Progress& progress) {
  // Nearby runs are read with one copy (a window of at most the staging buffer, gaps under
  // 1 MiB): a launch that changes every other chunk costs a few large copies, not millions.
  constexpr uint64_t kMaxGap = uint64_t{1} << 20;
  for (size_t i = 0; i < changed.size();) {
    size_t j = i + 1;
    const uint64_t start = changed[i].offset;
    while (j < changed.size() && changed[j].offset + changed[j].size - start <= stager.bytes() &&
           changed[j].offset - (changed[j - 1].offset + changed[j - 1].size) < kMaxGap)
      ++j;
    const uint64_t end = changed[j - 1].offset + changed[j - 1].size;
    stager.read(st.address + start, end - start, st.region.kind, [&](const uint8_t* data, uint64_t n, uint64_t base) {
      // One piece when the window fits the staging buffer; a single run larger than it comes
      // in pieces, each appended in order.
      for (size_t k = i; k < j; ++k) {
        const uint64_t lo = std::max(changed[k].offset, start + base), hi = std::min(changed[k].offset + changed[k].size, start + base + n);
        if (lo >= hi) continue;
        if (!runs.empty() && runs.back().region == st.region.id && runs.back().offset + runs.back().size == lo &&
            runs.back().file_offset + runs.back().size == after.offset())
          runs.back().size += hi - lo;
        else
          runs.push_back({st.region.id, lo, hi - lo, after.offset()});
        after.write(data + (lo - start - base), hi - lo);
      }
    });
    i = j;
  }
  progress.add(st.region.size);
}

void snapshot_after(Stager& stager, const RegionState& st, format::BlobWriter& after, uint32_t chunk,
                    std::vector<format::AfterRun>& runs, Progress& progress) {
  size_t index = 0;
  stager.read(st.address, st.region.size, st.region.kind, [&](const uint8_t* data, uint64_t n, uint64_t base) {
    for (uint64_t c = 0; c < n; c += chunk, ++index) {
      uint64_t len = std::min<uint64_t>(chunk, n - c);
      if (index < st.hashes.size() && XXH3_64bits(data + c, len) == st.hashes[index]) continue;
      uint64_t offset = base + c;
      // Extend the previous run when this chunk continues it (in the region and the file).
      if (!runs.empty() && runs.back().region == st.region.id && runs.back().offset + runs.back().size == offset &&
          runs.back().file_offset + runs.back().size == after.offset()) {
        runs.back().size += len;
      } else {
        runs.push_back({st.region.id, offset, len, after.offset()});
      }
      after.write(data + c, len);
    }
    progress.add(n);
  });
}

}  // namespace kerncap::capture
