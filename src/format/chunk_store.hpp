#pragma once
// The chunk store (format version 3): a region's stored bytes — its stored runs back to back
// — kept as chunks, each a file named by the XXH3-128 of its bytes, zstd-compressed when
// that makes it smaller (chunks/<hash>.zst) and kept as it is otherwise (chunks/<hash>.raw).
// Equal chunks are kept once: within a capture, and across the captures that share a store
// (`extract --store DIR`: five kernels of one model keep its weights once).
//
// Why these choices (docs/capture.md, "Compression and the chunk store", has the numbers):
// - A chunk holds the stored bytes of one 4 MiB-aligned window of its region, so a tensor at
//   the same place of an allocation gives the same chunks in every capture whatever else
//   the region holds; 4 MiB is large enough for zstd to reach its ratio and for the file
//   count to stay small (6,000 files for 24 GiB), small enough to give 16 chunks of work
//   per 64 MiB staging piece to the compression threads.
// - XXH3-128 names a chunk: at 128 bits an accidental collision is out of reach (2^64
//   chunks before one is likely); it is not a cryptographic hash, which matters only where
//   one party could plant chunks for another, a store shared by users who do not trust each
//   other (not supported: a store is one user's, 0700). A capture is untrusted input
//   whatever its hash: the reader verifies every chunk it reads against its name.
// - zstd level 1: the fastest level that still entropy-codes literals (levels below 1 store
//   float data uncompressed: ratio 1.00), about 500 MB/s per thread on floats; a few
//   threads keep up with a 1 GiB/s disk.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "format/manifest.hpp"

namespace kerncap::format {

namespace fs = std::filesystem;

inline constexpr uint64_t kChunkWindow = uint64_t{4} << 20;     // what the writer puts in one chunk
inline constexpr uint64_t kMaxChunkBytes = uint64_t{64} << 20;  // what the reader accepts
inline constexpr int kDefaultZstdLevel = 1;
inline constexpr int kMaxZstdLevel = 19;
inline constexpr const char* kChunkDir = "chunks";

// 32 lowercase hex digits: the high 64 bits, then the low.
std::string chunk_hash_hex(const ChunkRef& c);
// Exactly 32 lowercase hex digits; false otherwise (nothing else can become a file name).
bool parse_chunk_hash(std::string_view hex, ChunkRef& c);
// "<hash>.zst" or "<hash>.raw".
std::string chunk_file_name(const ChunkRef& c);

// Where a capture's chunks are: its own chunks/ directory, or a shared store whose directory
// the user gives (--store DIR or KERNCAP_STORE), never a path read from the capture.
struct ChunkSource {
  fs::path capture_dir;
  bool external = false;             // the manifest's external_store
  std::optional<fs::path> store;     // the user's store directory
  std::string hint;                  // the manifest's store_hint, for messages
};

// Reads one chunk into out[0, ref.size): the file opened confined (no link followed), of
// exactly ref.stored bytes, a zstd frame that declares exactly ref.size bytes and holds no
// more, whose bytes hash to the chunk's name. Error(Input) naming the chunk otherwise.
void read_chunk(const ChunkSource& src, const ChunkRef& ref, uint8_t* out);
// The chunk's file exists and has ref.stored bytes (open_capture's check; nothing read).
void check_chunk_file(const ChunkSource& src, const ChunkRef& ref);

// The store directory readers use when a capture keeps its chunks in one: the last
// set_default_store(), else KERNCAP_STORE (protocol.cpp), else none.
void set_default_store(const fs::path& dir);
std::optional<fs::path> default_store();

struct ChunkStats {
  uint64_t chunks = 0, bytes = 0;          // chunk references made, their uncompressed bytes
  uint64_t unique = 0, unique_bytes = 0;   // distinct chunks among them
  uint64_t file_bytes = 0;                 // the distinct chunks' files
  uint64_t written = 0, written_bytes = 0; // files this writer created (the rest were there)
  uint64_t raw = 0;                        // distinct chunks kept uncompressed
};

// Compresses, names and writes chunks on a bounded pool of threads. add() copies nothing
// (it takes the buffer) and blocks while `max_pending` chunks wait, so memory stays bounded
// (about (threads + max_pending) x 4 MiB). Failures (disk full) surface as Error(Device)
// from the next add() or from finish(). A chunk whose file already exists in `dir` (an
// earlier capture in a shared store) is not written again.
class ChunkWriter {
 public:
  struct Options {
    fs::path dir;                        // created (0700) when missing
    int level = kDefaultZstdLevel;       // 0: store every chunk raw
    unsigned threads = 0;                // 0: min(8, hardware threads)
    size_t max_pending = 0;              // 0: 2 x threads
  };
  explicit ChunkWriter(Options o);
  ~ChunkWriter();  // stops the threads; chunks not yet written are dropped
  ChunkWriter(const ChunkWriter&) = delete;
  ChunkWriter& operator=(const ChunkWriter&) = delete;

  // Queues a chunk (1..kMaxChunkBytes bytes); returns its ticket.
  size_t add(std::vector<uint8_t> data);
  // Waits for every queued chunk; throws the first failure.
  void finish();
  // After finish(): the reference of a ticket.
  const ChunkRef& ref(size_t ticket) const { return refs_.at(ticket); }
  ChunkStats stats() const;
  const fs::path& dir() const { return o_.dir; }

 private:
  void work();
  void write_one(size_t ticket, std::vector<uint8_t>& data, void* cctx);

  Options o_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // a job queued, a job done, stop
  std::deque<std::pair<size_t, std::vector<uint8_t>>> queue_;
  size_t busy_ = 0;
  bool stop_ = false;
  std::exception_ptr failure_;
  std::vector<ChunkRef> refs_;                                          // by ticket
  std::set<std::pair<uint64_t, uint64_t>> seen_;                        // hashes claimed by a job
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> file_size_;         // hash -> its file's bytes
  uint64_t written_ = 0, written_bytes_ = 0;
  std::vector<std::thread> threads_;
};

// Cuts one region's stored bytes, given in increasing region offsets, into chunks: all the
// bytes of one kChunkWindow-aligned window of the region go into one chunk.
class RegionChunker {
 public:
  explicit RegionChunker(ChunkWriter& w, uint64_t window = kChunkWindow) : w_(w), window_(window) {}
  void add(uint64_t region_offset, const uint8_t* data, uint64_t n);
  // The tickets of the region's chunks, in order (none when nothing was added).
  std::vector<size_t> finish();

 private:
  void flush();
  ChunkWriter& w_;
  uint64_t window_;
  uint64_t current_ = UINT64_MAX;  // window index of buf_
  std::vector<uint8_t> buf_;
  std::vector<size_t> tickets_;
};

}  // namespace kerncap::format
