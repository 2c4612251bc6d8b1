#pragma once
// Streaming device memory to disk through one pinned staging buffer (pageable copies run
// at ~1 GB/s, pinned at ~55 GB/s), hashing fixed-size chunks on the way so that AFTER
// stores only the chunks the launch changed. Never holds a region in host memory.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "capture/chunk_runs.hpp"
#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"
#include "format/manifest.hpp"

namespace kerncap::capture {

class Progress {
 public:
  Progress(std::string what, uint64_t total, bool enabled);
  void add(uint64_t n);
  void done();

 private:
  std::string what_;
  uint64_t total_ = 0, done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_;
};

class Stager {
 public:
  explicit Stager(uint64_t bytes);
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;
  using Sink = std::function<void(const uint8_t* data, uint64_t size, uint64_t offset)>;
  // Reads [addr, addr+size) piece by piece. Host-resident kinds are read in place.
  void read(uint64_t addr, uint64_t size, format::MemKind kind, const Sink& sink);
  uint64_t bytes() const { return bytes_; }

 private:
  uint8_t* buf_ = nullptr;
  uint64_t bytes_ = 0;
};

struct RegionState {
  format::Region region;
  uint64_t address = 0;          // where to read it now (== region.base except globals)
  std::vector<uint64_t> hashes;  // one per chunk, from BEFORE (device signatures when scanned)
  bool scanned = false;          // hashes are the device scan's (GpuScanner), BEFORE is sparse
  std::vector<size_t> tickets;   // BEFORE's chunks (format::ChunkWriter), in order
};

// BEFORE: hands the whole region to `chunks` (st.tickets), records the change-detection
// hashes and the hash of the stored bytes.
void snapshot_before(Stager& stager, RegionState& st, format::ChunkWriter& chunks, uint32_t chunk,
                     Progress& progress);
// BEFORE of a scanned region: stores only `runs` (its non-zero parts, chunk_runs.hpp) and
// records them in region.stored; region.xxh64 is the hash of the stored bytes.
void snapshot_before_sparse(Stager& stager, RegionState& st, const std::vector<ByteRun>& runs,
                            format::ChunkWriter& chunks, Progress& progress);
// AFTER of a scanned region: copies only the `changed` runs (from a second device scan).
void snapshot_after_changed(Stager& stager, const RegionState& st, const std::vector<ByteRun>& changed,
                            format::BlobWriter& after, std::vector<format::AfterRun>& runs, Progress& progress);
// AFTER: re-reads the region, appends each run of changed chunks to `after`.
void snapshot_after(Stager& stager, const RegionState& st, format::BlobWriter& after, uint32_t chunk,
                    std::vector<format::AfterRun>& runs, Progress& progress);

}  // namespace kerncap::capture
