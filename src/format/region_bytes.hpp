#pragma once
// A region's BEFORE bytes as the application had them, whether they are kept in a file that
// holds the whole region, in a file or in chunks (format version 3, chunk_store.hpp) that
// hold only the runs that were not zero (a sparse region, Region::stored), with pruned
// ranges (Region::pruned) or none at all (an omitted region). Every reader of BEFORE bytes
// goes through it: restore, validation, footprint, info --verify, prune.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"
#include "format/manifest.hpp"

namespace kerncap::format {

class RegionBytes {
 public:
  RegionBytes(const Capture& c, const Region& r);
  // Fills data with the region's bytes [offset, offset + size); bytes a sparse region did
  // not store are zeros, pruned bytes and an omitted region's bytes kOmittedFill. Every
  // stored byte is also passed to on_file_bytes when set, so sequential reads of the whole
  // region see the stored bytes in order (their hash, Region::xxh64).
  void read_at(uint64_t offset, void* data, uint64_t size);
  // Several read_at's at once, in increasing offsets and apart: the chunks all of them need
  // are decoded side by side (restore reads the stored runs between the long zero runs it
  // memsets on the device, often a few MiB each, as one batch per staging buffer).
  struct Piece {
    uint64_t offset = 0, size = 0;
    uint8_t* out = nullptr;
  };
  void read_pieces(const std::vector<Piece>& pieces);
  // The one value every byte of [offset, offset + size) holds when none of them is stored
  // (zeros, or kOmittedFill); none when some byte is stored or the fills differ.
  std::optional<uint8_t> uniform_fill(uint64_t offset, uint64_t size) const;
  // Whether [offset, offset + size) holds no stored byte.
  bool unstored(uint64_t offset, uint64_t size) const;
  // The whole region as consecutive pieces, each either bytes to read (fill unset: stored
  // bytes, and nothing else) or bytes that all hold one value (zeros, kOmittedFill); pieces
  // next to each other differ. Restore memsets the fills on the device and reads the rest.
  struct Segment {
    uint64_t offset = 0, size = 0;
    std::optional<uint8_t> fill;
  };
  std::vector<Segment> segments() const;
  // What bytes that were not stored hold, outside pruned ranges: 0, or kOmittedFill for an
  // omitted region.
  uint8_t fill() const { return region_.omitted ? kOmittedFill : 0; }
  std::function<void(const uint8_t*, uint64_t)> on_file_bytes;

  // The stored bytes themselves (the runs back to back): how many, and a piece of them.
  uint64_t stored_size() const { return stored_size_; }
  void read_stored(uint64_t at, uint8_t* out, uint64_t n);

 private:
  const std::vector<StoredRun>& runs() const { return region_.stored ? *region_.stored : whole_; }
  struct Span {
    uint64_t at = 0, size = 0;  // among the stored bytes
    uint8_t* out = nullptr;
  };
  void read_spans(const std::vector<Span>& spans);
  void decode_parallel(const std::vector<std::pair<size_t, uint8_t*>>& jobs);

  const Region& region_;
  std::vector<StoredRun> whole_;         // the one run of a region stored whole
  std::optional<BlobReader> file_;       // versions 1, 2 (and a version 3 region given a file)
  ChunkSource source_;
  std::vector<uint64_t> run_at_;         // where each stored run starts among the stored bytes
  std::vector<uint64_t> chunk_at_;       // where each chunk starts among the stored bytes
  uint64_t stored_size_ = 0;
  size_t cached_ = SIZE_MAX;             // the chunk in cache_ (pieces of chunks read in part)
  std::vector<uint8_t> cache_;
};

}  // namespace kerncap::format
