#include "format/chunk_store.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "format/capture_dir.hpp"
#include "format/protocol.hpp"
#include "format/safe_file.hpp"

namespace kerncap::format {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case too: one spelling per chunk, so one file name
}

std::pair<uint64_t, uint64_t> key(const ChunkRef& c) { return {c.hash_hi, c.hash_lo}; }

std::string where(const ChunkSource& src) {
  return src.external ? fmt::format("the chunk store {}", src.store ? src.store->string() : std::string("?"))
                      : fmt::format("{}/{}", src.capture_dir.string(), kChunkDir);
}

ReadOnlyFile open_chunk(const ChunkSource& src, const ChunkRef& ref) {
  const std::string name = chunk_file_name(ref);
  if (!src.external) return ReadOnlyFile::open_in(src.capture_dir, std::string(kChunkDir) + "/" + name, "a chunk of BEFORE memory");
  if (!src.store)
    input_error(fmt::format("this capture keeps its BEFORE memory in a shared chunk store ({} when it was captured); "
                            "name that directory with --store DIR (or KERNCAP_STORE=DIR)",
                            src.hint.empty() ? std::string("path not recorded") : src.hint));
  return ReadOnlyFile::open_in(*src.store, name, "a chunk of BEFORE memory");
}

[[noreturn]] void bad_chunk(const ChunkSource& src, const ChunkRef& ref, const std::string& what) {
  input_error(fmt::format("chunk {} in {} {}: the capture or its chunk store is damaged or was changed after the "
                          "capture; extract again",
                          chunk_file_name(ref), where(src), what));
}

std::optional<fs::path>& store_override() {
  static std::optional<fs::path> dir;
  return dir;
}

}  // namespace

std::string chunk_hash_hex(const ChunkRef& c) { return fmt::format("{:016x}{:016x}", c.hash_hi, c.hash_lo); }

bool parse_chunk_hash(std::string_view hex, ChunkRef& c) {
  if (hex.size() != 32) return false;
  uint64_t v[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    const int d = hex_value(hex[i]);
    if (d < 0) return false;
    v[i / 16] = v[i / 16] << 4 | static_cast<uint64_t>(d);
  }
  c.hash_hi = v[0];
  c.hash_lo = v[1];
  return true;
}

std::string chunk_file_name(const ChunkRef& c) { return chunk_hash_hex(c) + (c.raw() ? ".raw" : ".zst"); }

void check_chunk_file(const ChunkSource& src, const ChunkRef& ref) {
  const uint64_t actual = open_chunk(src, ref).size();
  if (actual != ref.stored) bad_chunk(src, ref, fmt::format("has {} bytes, the manifest says {}", actual, ref.stored));
}

void read_chunk(const ChunkSource& src, const ChunkRef& ref, uint8_t* out) {
  if (ref.size == 0 || ref.size > kMaxChunkBytes || ref.stored == 0 || ref.stored > ref.size)
    bad_chunk(src, ref, fmt::format("has impossible sizes ({} stored for {})", ref.stored, ref.size));
  const ReadOnlyFile f = open_chunk(src, ref);
  if (f.size() != ref.stored) bad_chunk(src, ref, fmt::format("has {} bytes, the manifest says {}", f.size(), ref.stored));
  if (ref.raw()) {
    f.read_at(0, out, ref.size);
  } else {
    // The compressed bytes go to a buffer each thread keeps: a fresh 4 MiB vector per chunk
    // costs its zeroing and a page fault per 4 KiB, a good part of a chunk's decode time.
    thread_local std::vector<uint8_t> zbuf;
    if (zbuf.size() < ref.stored) zbuf.resize(ref.stored);
    const std::span<uint8_t> z(zbuf.data(), ref.stored);
    f.read_at(0, z.data(), z.size());
    // Bounded before anything is decompressed: the frame must declare exactly the size the
    // manifest gives (a small frame cannot then expand into more), and end where the file does.
    const unsigned long long declared = ZSTD_getFrameContentSize(z.data(), z.size());
    if (declared == ZSTD_CONTENTSIZE_ERROR) bad_chunk(src, ref, "is not a zstd frame");
    if (declared == ZSTD_CONTENTSIZE_UNKNOWN) bad_chunk(src, ref, "is a zstd frame that does not declare its size");
    if (declared != ref.size)
      bad_chunk(src, ref, fmt::format("declares {} bytes, the manifest says {}", declared, ref.size));
    const size_t frame = ZSTD_findFrameCompressedSize(z.data(), z.size());
    if (ZSTD_isError(frame) || frame != z.size()) bad_chunk(src, ref, "holds more than one zstd frame or a cut one");
    thread_local std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
    if (!dctx) device_error("out of memory for a zstd decompression context");
    const size_t n = ZSTD_decompressDCtx(dctx.get(), out, ref.size, z.data(), z.size());
    if (ZSTD_isError(n)) bad_chunk(src, ref, fmt::format("does not decompress ({})", ZSTD_getErrorName(n)));
    if (n != ref.size) bad_chunk(src, ref, fmt::format("decompresses to {} bytes, the manifest says {}", n, ref.size));
  }
  const XXH128_hash_t h = XXH3_128bits(out, ref.size);
  if (h.high64 != ref.hash_hi || h.low64 != ref.hash_lo) bad_chunk(src, ref, "does not match its name (hash)");
}

void set_default_store(const fs::path& dir) { store_override() = dir; }

std::optional<fs::path> default_store() {
  if (store_override()) return store_override();
  if (auto env = store_from_env()) return fs::path(*env);
  return std::nullopt;
}

// ---- writing ----

ChunkWriter::ChunkWriter(Options o) : o_(std::move(o)) {
  o_.level = std::clamp(o_.level, 0, kMaxZstdLevel);
  if (o_.threads == 0) o_.threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  if (o_.max_pending == 0) o_.max_pending = 2 * o_.threads;
  std::error_code ec;
  if (!fs::is_directory(o_.dir, ec)) files::create_private_dirs(o_.dir);
  for (unsigned i = 0; i < o_.threads; ++i) threads_.emplace_back([this] { work(); });
}

ChunkWriter::~ChunkWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

size_t ChunkWriter::add(std::vector<uint8_t> data) {
  if (data.empty() || data.size() > kMaxChunkBytes)
    fail(ErrorKind::Internal, fmt::format("a chunk of {} bytes", data.size()));
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return queue_.size() < o_.max_pending || failure_; });
  if (failure_) std::rethrow_exception(failure_);
  const size_t ticket = refs_.size();
  refs_.push_back({0, 0, data.size(), 0});
  queue_.emplace_back(ticket, std::move(data));
  l.unlock();
  cv_.notify_all();
  return ticket;
}

void ChunkWriter::finish() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return (queue_.empty() && busy_ == 0) || failure_; });
  if (failure_) std::rethrow_exception(failure_);
  for (auto& r : refs_) r.stored = file_size_.at(key(r));
}

ChunkStats ChunkWriter::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  ChunkStats s;
  std::set<std::pair<uint64_t, uint64_t>> seen;
  for (const auto& r : refs_) {
    ++s.chunks;
    s.bytes += r.size;
    if (!seen.insert(key(r)).second) continue;
    ++s.unique;
    s.unique_bytes += r.size;
    s.file_bytes += r.stored;
    s.raw += r.raw();
  }
  s.written = written_;
  s.written_bytes = written_bytes_;
  return s;
}

void ChunkWriter::work() {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  for (;;) {
    std::pair<size_t, std::vector<uint8_t>> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    cv_.notify_all();  // room in the queue
    try {
      write_one(job.first, job.second, cctx.get());
    } catch (...) {
      std::lock_guard<std::mutex> l(mu_);
      if (!failure_) failure_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      --busy_;
    }
    cv_.notify_all();
  }
}

void ChunkWriter::write_one(size_t ticket, std::vector<uint8_t>& data, void* cctx_ptr) {
  const XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  ChunkRef ref{h.high64, h.low64, data.size(), 0};
  {
    std::lock_guard<std::mutex> l(mu_);
    refs_[ticket] = ref;
    if (!seen_.insert(key(ref)).second) return;  // another job has (or is writing) this chunk
  }
  // Already in the store (an earlier capture): keep that file. Only a regular file counts;
  // anything else at the name is replaced by the rename below, never written through.
  for (const uint64_t stored : {uint64_t{1}, data.size()}) {  // .zst (any smaller size), then .raw
    ChunkRef probe = ref;
    probe.stored = stored == data.size() ? data.size() : 0;
    struct stat st {};
    if (::lstat((o_.dir / chunk_file_name(probe)).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<uint64_t>(st.st_size) > 0 && static_cast<uint64_t>(st.st_size) <= data.size() &&
        (static_cast<uint64_t>(st.st_size) == data.size()) == probe.raw()) {
      std::lock_guard<std::mutex> l(mu_);
      file_size_[key(ref)] = static_cast<uint64_t>(st.st_size);
      return;
    }
  }
  std::vector<uint8_t> z;
  const uint8_t* bytes = data.data();
  size_t n = data.size();
  if (o_.level > 0) {
    auto* cctx = static_cast<ZSTD_CCtx*>(cctx_ptr);
    if (!cctx) device_error("out of memory for a zstd compression context");
    z.resize(ZSTD_compressBound(data.size()));
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, o_.level);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);  // the reader requires it
    const size_t zn = ZSTD_compress2(cctx, z.data(), z.size(), data.data(), data.size());
    if (!ZSTD_isError(zn) && zn < data.size()) {  // else incompressible: kept raw
      bytes = z.data();
      n = zn;
    }
  }
  ref.stored = n;
  static std::atomic<uint64_t> counter{0};
  const fs::path final_path = o_.dir / chunk_file_name(ref);
  const fs::path tmp = o_.dir / fmt::format(".{}.{}.{}.tmp", chunk_hash_hex(ref), ::getpid(), counter++);
  std::error_code ec;
  try {
    BlobWriter w(tmp);
    w.write(bytes, n);
    w.close();
  } catch (...) {
    // Disk full mid-chunk: the half-written file goes, so a shared store keeps only whole
    // chunks (tests/unit/storage_disk_full_test.cpp).
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, final_path, ec);  // a concurrent capture writing the same chunk wrote the same bytes
  if (ec) {
    fs::remove(tmp, ec);
    device_error(fmt::format("cannot store chunk {}: {}", final_path.string(), ec.message()));
  }
  std::lock_guard<std::mutex> l(mu_);
  file_size_[key(ref)] = n;
  ++written_;
  written_bytes_ += n;
}

void RegionChunker::add(uint64_t region_offset, const uint8_t* data, uint64_t n) {
  while (n) {
    const uint64_t w = region_offset / window_;
    if (w != current_) {
      flush();
      current_ = w;
      buf_.reserve(window_);
    }
    const uint64_t take = std::min(n, (w + 1) * window_ - region_offset);
    buf_.insert(buf_.end(), data, data + take);
    data += take;
    n -= take;
    region_offset += take;
  }
}

void RegionChunker::flush() {
  if (buf_.empty()) return;
  tickets_.push_back(w_.add(std::move(buf_)));
  buf_ = {};
}

std::vector<size_t> RegionChunker::finish() {
  flush();
  current_ = UINT64_MAX;
  return std::move(tickets_);
}

}  // namespace kerncap::format
