#include "capture/snapshot.hpp"

#include <xxhash.h>

#include <algorithm>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"

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

void snapshot_before(Stager& stager, RegionState& st, const std::filesystem::path& dir, uint32_t chunk,
                     Progress& progress) {
  format::BlobWriter out(dir / st.region.file);
  XXH64_state_t* whole = XXH64_createState();
  XXH64_reset(whole, 0);
  st.hashes.clear();
  st.hashes.reserve((st.region.size + chunk - 1) / chunk);
  // Staging pieces are multiples of the chunk size, so chunks never straddle pieces.
  stager.read(st.address, st.region.size, st.region.kind, [&](const uint8_t* data, uint64_t n, uint64_t) {
    out.write(data, n);
    XXH64_update(whole, data, n);
    for (uint64_t c = 0; c < n; c += chunk) st.hashes.push_back(XXH3_64bits(data + c, std::min<uint64_t>(chunk, n - c)));
    progress.add(n);
  });
  st.region.xxh64 = XXH64_digest(whole);
  XXH64_freeState(whole);
  out.close();
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
