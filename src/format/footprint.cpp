#include "format/footprint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/private_files.hpp"
#include "format/capture_dir.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::format {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

[[noreturn]] void corrupt(const std::string& what) {
  input_error(fmt::format("the capture's footprint is damaged ({}); measure it again with `kerncap footprint "
                          "OUT --force`",
                          what));
}

void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

uint64_t get_varint(std::span<const uint8_t> data, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= data.size()) corrupt("a run list ends in the middle of a number");
    uint8_t b = data[pos++];
    v |= uint64_t{b & 0x7fu} << shift;
    if (!(b & 0x80)) return v;
  }
  corrupt("a run list holds a number longer than 64 bits");
}

}  // namespace

Bitmap::Bitmap(uint32_t granule, uint64_t region_size)
    : granule_(granule), region_size_(region_size), bits_(ceil_div(region_size, granule)),
      blocks_(ceil_div(ceil_div(bits_, 64), kBlockWords)) {}

Bitmap Bitmap::from_words32(uint32_t granule, uint64_t region_size, std::span<const uint32_t> words) {
  Bitmap b(granule, region_size);
  const uint64_t n = b.word_count();
  if (words.size() < ceil_div(b.bits_, 32))
    fail(ErrorKind::Internal, fmt::format("{} bitmap words for {} bits", words.size(), b.bits_));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t lo = words[2 * i];
    const uint64_t hi = 2 * i + 1 < words.size() ? words[2 * i + 1] : 0;
    uint64_t w = lo | (hi << 32);
    // Bits past the region's last granule are never set by a correct device, but keep the
    // invariant (padding is zero) whatever came back.
    if (i == n - 1 && b.bits_ % 64) w &= (uint64_t{1} << (b.bits_ % 64)) - 1;
    if (w) b.word_ref(i) = w;
  }
  return b;
}

uint64_t& Bitmap::word_ref(uint64_t w) {
  std::vector<uint64_t>& b = blocks_[w >> kBlockShift];
  if (b.empty()) b.assign(kBlockWords, 0);
  return b[w & (kBlockWords - 1)];
}

void Bitmap::set(uint64_t i) { word_ref(i >> 6) |= uint64_t{1} << (i & 63); }

void Bitmap::set_range(uint64_t first, uint64_t count) {
  uint64_t i = first;
  const uint64_t end = first + count;
  for (; i < end && (i & 63); ++i) set(i);
  for (; i + 64 <= end; i += 64) word_ref(i >> 6) = ~uint64_t{0};
  for (; i < end; ++i) set(i);
}

uint64_t Bitmap::count() const {
  uint64_t n = 0;
  for (const auto& b : blocks_)
    for (uint64_t w : b) n += static_cast<uint64_t>(std::popcount(w));
  return n;
}

uint64_t Bitmap::bytes() const {
  uint64_t n = count() * granule_;
  // The last granule may hang over the region's end.
  if (bits_ && test(bits_ - 1)) n -= bits_ * granule_ - region_size_;
  return n;
}

uint64_t Bitmap::next_set(uint64_t i) const {
  while (i < bits_) {
    const uint64_t blk = i >> (6 + kBlockShift);
    if (blocks_[blk].empty()) {  // a whole block of zeros
      i = (blk + 1) << (6 + kBlockShift);
      continue;
    }
    const uint64_t w = word(i >> 6) >> (i & 63);
    if (w) return std::min(bits_, i + static_cast<uint64_t>(std::countr_zero(w)));
    i = (i | 63) + 1;
  }
  return bits_;
}

uint64_t Bitmap::next_clear(uint64_t i) const {
  while (i < bits_) {
    const uint64_t blk = i >> (6 + kBlockShift);
    if (blocks_[blk].empty()) return i;
    const uint64_t inv = ~word(i >> 6) >> (i & 63);
    if (inv) return std::min(bits_, i + static_cast<uint64_t>(std::countr_zero(inv)));
    i = (i | 63) + 1;
  }
  return bits_;
}

bool Bitmap::operator==(const Bitmap& o) const {
  if (granule_ != o.granule_ || region_size_ != o.region_size_ || bits_ != o.bits_) return false;
  for (uint64_t b = 0; b < blocks_.size(); ++b) {
    if (blocks_[b].empty() && o.blocks_[b].empty()) continue;
    for (uint64_t k = 0; k < kBlockWords; ++k) {
      const uint64_t w = (b << kBlockShift) + k;
      if (word(w) != o.word(w)) return false;
    }
  }
  return true;
}

std::string to_string(BitmapEncoding e) { return e == BitmapEncoding::Runs ? "runs" : "raw"; }

std::vector<uint8_t> encode_bitmap(const Bitmap& b, BitmapEncoding* chosen) {
  std::vector<uint8_t> runs, body;
  uint64_t n = 0, prev_end = 0;
  b.for_each_run([&](uint64_t first, uint64_t count) {
    put_varint(body, first - prev_end);
    put_varint(body, count);
    prev_end = first + count;
    ++n;
  });
  put_varint(runs, n);
  runs.insert(runs.end(), body.begin(), body.end());
  const uint64_t raw_size = ceil_div(b.bits(), 8);
  if (runs.size() <= raw_size) {
    *chosen = BitmapEncoding::Runs;
    return runs;
  }
  *chosen = BitmapEncoding::Raw;
  std::vector<uint8_t> raw(raw_size);
  b.for_each_word([&](uint64_t w, uint64_t bits) {
    for (uint64_t k = 0; k < 8 && 8 * w + k < raw_size; ++k) raw[8 * w + k] = static_cast<uint8_t>(bits >> (8 * k));
  });
  return raw;
}

Bitmap decode_bitmap(std::span<const uint8_t> data, BitmapEncoding enc, uint32_t granule, uint64_t region_size,
                     uint64_t count) {
  Bitmap b(granule, region_size);
  if (enc == BitmapEncoding::Raw) {
    if (data.size() != ceil_div(b.bits(), 8))
      corrupt(fmt::format("a plain bitmap of {} bits has {} bytes", b.bits(), data.size()));
    if (b.bits() % 8 && (data.back() >> (b.bits() % 8)))
      corrupt("a plain bitmap has bits set past its region's end");
    for (size_t i = 0; i < data.size(); ++i)
      for (unsigned k = 0; data[i] >> k; ++k)
        if ((data[i] >> k) & 1) b.set(8 * i + k);
  } else {
    size_t pos = 0;
    const uint64_t n = get_varint(data, pos);
    uint64_t end = 0;
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t gap = get_varint(data, pos), len = get_varint(data, pos);
      if (len == 0 || (k > 0 && gap == 0)) corrupt("a run list has an empty or unmerged run");
      if (gap > b.bits() - end || len > b.bits() - end - gap)
        corrupt(fmt::format("a run reaches past its region's {} granules", b.bits()));
      b.set_range(end + gap, len);
      end += gap + len;
    }
    if (pos != data.size()) corrupt("a run list has trailing bytes");
  }
  if (b.count() != count) corrupt(fmt::format("a bitmap holds {} granules, the summary says {}", b.count(), count));
  return b;
}

namespace {

// The written bytes (1-byte granules) whose 4-byte granule is not set in `excluded`.
Bitmap written_outside(const Bitmap& written, const Bitmap& excluded, uint64_t size) {
  Bitmap out(1, size);
  // Bytes 4k..4k+3 share granule k of `excluded`; a 64-bit word of `written` covers 16 of them.
  written.for_each_word([&](uint64_t w, uint64_t bits) {
    for (uint64_t j = 0; j < 64; ++j) {
      const uint64_t byte = w * 64 + j;
      if (((bits >> j) & 1) && !excluded.test(byte / 4)) out.set(byte);
    }
  });
  return out;
}

}  // namespace

Bitmap RegionFootprint::write_only() const { return written_outside(written, rbw, size); }

Bitmap RegionFootprint::never_read() const { return written_outside(written, read, size); }

uint64_t RegionFootprint::write_only_bytes() const { return write_only().count(); }

// ---- files -------------------------------------------------------------------------------

namespace {

struct BitmapEntry {
  const char* name;
  uint32_t granule;
  Bitmap RegionFootprint::*member;
};
constexpr BitmapEntry kBitmaps[] = {{"read", 4, &RegionFootprint::read},
                                    {"written", 1, &RegionFootprint::written},
                                    {"rbw", 4, &RegionFootprint::rbw}};

nlohmann::json escape_json(const Escape& e) {
  return {{"address", hex_addr(e.address)}, {"pc", hex_addr(e.pc)}, {"size", e.size},   {"read", e.read},
          {"write", e.write},               {"atomic", e.atomic},   {"nearest", e.nearest}};
}

nlohmann::json region_summary(const RegionFootprint& r) {
  return {{"id", r.id},
          {"kind", to_string(r.kind)},
          {"base", hex_addr(r.base)},
          {"size", r.size},
          {"global", r.global},
          {"read_bytes", r.read_bytes()},
          {"written_bytes", r.written_bytes()},
          {"rbw_bytes", r.rbw_bytes()},
          {"write_only_bytes", r.write_only_bytes()},
          {"probed", r.probed}};
}

// A file written whole at `p` (a stale one there first unlinked, never followed), or, on a
// write error (a full disk), none.
void write_temporary(const fs::path& p, std::string_view data) {
  if (::unlink(p.c_str()) != 0 && errno != ENOENT)
    input_error(fmt::format("cannot remove the stale {}: {}", p.string(), std::strerror(errno)));
  try {
    files::write_new_file(p, data);
  } catch (...) {
    ::unlink(p.c_str());
    throw;
  }
}

// One footprint writer at a time, and readers never between a writer's steps: `kerncap
// footprint` twice at once, or a validate measuring one itself beside it, otherwise interleave
// the remove and renames below and leave one writer's json beside the other's bin (refused as
// damaged), and a reader between them finds the json gone. An flock(2) on the capture's
// manifest.json, which no other code locks: exclusive to write, shared to read; the manifest
// is only replaced by prune, which holds the capture's directory lock exclusively while every
// footprint reader and writer holds it shared. Opened without following a link and without
// blocking on a FIFO (the directory is untrusted input); where it cannot be opened or locked
// (ENOLCK), the footprint is read and written without it, as before.
class FootprintLock {
 public:
  FootprintLock(const fs::path& dir, bool exclusive) {
    fd_ = ::open((dir / kManifestName).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return;
    while (::flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0)
      if (errno != EINTR) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
  }
  ~FootprintLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FootprintLock(const FootprintLock&) = delete;
  FootprintLock& operator=(const FootprintLock&) = delete;

 private:
  int fd_ = -1;
};

[[noreturn]] void rename_failed(const char* what, const fs::path& p, int err) {
  input_error(fmt::format("cannot {} {}: {}; the capture has no footprint now: measure it again with `kerncap "
                          "footprint OUT`",
                          what, p.string(), std::strerror(err)));
}

}  // namespace

nlohmann::json summary_json(const Footprint& f) {
  nlohmann::json regions = nlohmann::json::array(), escapes = nlohmann::json::array();
  for (const auto& r : f.regions) regions.push_back(region_summary(r));
  for (const auto& e : f.escapes) escapes.push_back(escape_json(e));
  return {{"format", kFootprintName},
          {"format_version", f.version},
          {"tool_version", f.tool_version},
          {"kernel", f.kernel},
          {"image_hash", hex_addr(f.image_hash)},
          {"device", f.device_name},
          {"regions", regions},
          {"escape_count", f.escape_count},
          {"escapes", escapes},
          {"accesses", f.accesses},
          {"kernel_pc", hex_addr(f.kernel_pc)},
          {"instrumented_ms", f.instrumented_ms},
          {"plain_ms", f.plain_ms},
          {"seconds", f.seconds},
          {"sanitizer_library", f.sanitizer_library}};
}

void write_footprint(const fs::path& dir, const Footprint& f) {
  std::vector<uint8_t> bin;
  nlohmann::json j = summary_json(f);
  for (size_t i = 0; i < f.regions.size(); ++i) {
    nlohmann::json maps;
    for (const auto& e : kBitmaps) {
      const Bitmap& b = f.regions[i].*e.member;
      BitmapEncoding enc{};
      std::vector<uint8_t> data = encode_bitmap(b, &enc);
      maps[e.name] = {{"granule", b.granule()}, {"encoding", to_string(enc)}, {"offset", bin.size()},
                      {"length", data.size()},  {"count", b.count()}};
      bin.insert(bin.end(), data.begin(), data.end());
    }
    j["regions"][i]["bitmaps"] = maps;
  }
  j["bin"] = {{"file", kFootprintBin}, {"size", bin.size()}, {"xxh64", hex_addr(XXH64(bin.data(), bin.size(), 0))}};
  const std::string text = j.dump(1) + "\n";
  // footprint.json names its footprint.bin by size and hash: the two are one footprint, and
  // a json beside another footprint's bin is a damaged one (every reader refuses it, validate
  // included). So both are written whole under temporary names first: a full disk fails here
  // and the old pair stays as it was. Then footprint.json goes, the bin is renamed over the
  // old one and the new json renamed in: killed at any moment (issue 38's fault matrix), a
  // reader finds the old footprint or none (footprint_exists looks for footprint.json), and
  // the next `kerncap footprint` measures again.
  const fs::path json_path = dir / kFootprintJson, bin_path = dir / kFootprintBin;
  const fs::path json_tmp = fs::path(json_path) += ".tmp", bin_tmp = fs::path(bin_path) += ".tmp";
  const FootprintLock lock(dir, true);
  std::error_code ec;
  const bool had = fs::exists(json_path, ec);
  try {
    write_temporary(bin_tmp, std::string_view(reinterpret_cast<const char*>(bin.data()), bin.size()));
    write_temporary(json_tmp, text);
  } catch (const Error& e) {
    ::unlink(bin_tmp.c_str());
    ::unlink(json_tmp.c_str());
    fail(e.kind(), fmt::format("the footprint was not written ({}); the capture keeps {}", e.what(),
                               had ? "its earlier footprint, unchanged" : "no footprint"));
  }
  if (::unlink(json_path.c_str()) != 0 && errno != ENOENT) rename_failed("remove", json_path, errno);
  if (::rename(bin_tmp.c_str(), bin_path.c_str()) != 0) rename_failed("rename", bin_tmp, errno);
  if (::rename(json_tmp.c_str(), json_path.c_str()) != 0) rename_failed("rename", json_tmp, errno);
}

bool footprint_exists(const fs::path& dir) {
  const FootprintLock lock(dir, false);  // a write in progress ends first
  std::error_code ec;
  return fs::exists(dir / kFootprintJson, ec);
}

namespace {

const JsonDoc kDoc{"the capture's footprint is damaged (footprint.json)",
                   "measure it again with `kerncap footprint OUT --force`"};

// Bitmaps cost a bit per granule: a region larger than any GPU's memory is a damaged file,
// not an allocation to attempt.
constexpr uint64_t kMaxRegionBytes = uint64_t{1} << 44;

uint64_t hex_field(const JsonField& f) {
  try {
    return f.hex();
  } catch (const Error&) {
    corrupt(fmt::format("footprint.json has a malformed {}", f.path()));
  }
}

RegionFootprint read_region(const JsonField& rj, const std::vector<uint8_t>& bin, const Manifest* expected,
                            size_t index) {
  RegionFootprint r;
  r.id = rj.at("id").u32();
  const std::string kind = rj.at("kind").str(64);
  try {
    r.kind = mem_kind_from_string(kind);
  } catch (const Error&) {
    rj.at("kind").fail(fmt::format("is an unknown memory kind '{}'", kind));
  }
  r.size = rj.at("size").u64(0, kMaxRegionBytes);
  r.global = rj.at("global").str();
  if (auto p = rj.find("probed")) r.probed = p->boolean();  // absent in footprints measured before probing
  r.base = hex_field(rj.at("base"));
  if (expected) {
    if (index >= expected->regions.size() || expected->regions[index].id != r.id ||
        expected->regions[index].size != r.size)
      input_error(fmt::format("the capture's footprint was measured on another capture (its region {} has {} bytes); "
                              "measure it again with `kerncap footprint OUT --force`",
                              r.id, r.size));
  }
  const JsonField maps = rj.at("bitmaps");
  for (const auto& e : kBitmaps) {
    const JsonField m = maps.at(e.name);
    const uint32_t granule = m.at("granule").u32();
    if (granule != e.granule)
      corrupt(fmt::format("region {}'s {} bitmap has granule {}, expected {}", r.id, e.name, granule, e.granule));
    const std::string enc = m.at("encoding").str(16);
    if (enc != "runs" && enc != "raw") corrupt(fmt::format("unknown bitmap encoding \"{}\"", enc));
    const uint64_t off = m.at("offset").u64(), len = m.at("length").u64();
    if (off > bin.size() || len > bin.size() - off)
      corrupt(fmt::format("region {}'s {} bitmap lies outside footprint.bin", r.id, e.name));
    r.*e.member = decode_bitmap(std::span<const uint8_t>(bin.data() + off, len),
                                enc == "runs" ? BitmapEncoding::Runs : BitmapEncoding::Raw, e.granule, r.size,
                                m.at("count").u64());
  }
  return r;
}

// A footprint file, confined to the capture directory like every file of it.
ReadOnlyFile open_footprint_file(const fs::path& dir, const char* name) {
  try {
    return ReadOnlyFile::open_in(dir, name, "the footprint");
  } catch (const Error& e) {
    corrupt(e.what());
  }
}

Footprint read_checked(const fs::path& dir, const Manifest* expected) {
  const std::vector<uint8_t> text = open_footprint_file(dir, kFootprintJson).read_all(kMaxJsonBytes);
  const nlohmann::json j =
      parse_bounded_json(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), kDoc);
  const JsonField top(j, kDoc);
  if (top.at("format").str(64) != kFootprintName) corrupt("footprint.json is not a kerncap footprint");
  Footprint f;
  f.version = top.at("format_version").i32();
  if (f.version != kFootprintVersion)
    input_error(fmt::format("the capture's footprint has format version {}, this kerncap reads version {}; measure "
                            "it again with `kerncap footprint OUT --force`",
                            f.version, kFootprintVersion));
  f.tool_version = top.at("tool_version").str();
  f.kernel = top.at("kernel").str();
  f.device_name = top.at("device").str();
  f.escape_count = top.at("escape_count").u64();
  f.accesses = top.at("accesses").u64();
  f.instrumented_ms = top.at("instrumented_ms").number();
  f.plain_ms = top.at("plain_ms").number();
  f.seconds = top.at("seconds").number();
  f.sanitizer_library = top.at("sanitizer_library").str();
  f.image_hash = hex_field(top.at("image_hash"));
  f.kernel_pc = hex_field(top.at("kernel_pc"));

  const JsonField bin_j = top.at("bin");
  if (bin_j.at("file").str() != kFootprintBin) corrupt("footprint.json names another bitmap file");
  const ReadOnlyFile bin_file = open_footprint_file(dir, kFootprintBin);
  const uint64_t declared = bin_j.at("size").u64();
  if (bin_file.size() != declared) corrupt(fmt::format("footprint.bin has {} bytes, footprint.json says {}", bin_file.size(), declared));
  const std::vector<uint8_t> bin = bin_file.read_all();
  if (hex_addr(XXH64(bin.data(), bin.size(), 0)) != bin_j.at("xxh64").str(64))
    corrupt("footprint.bin does not match the hash footprint.json records");

  const JsonField regions = top.at("regions");
  uint64_t total = 0;
  for (size_t i = 0, n = regions.array_size(); i < n; ++i) {
    f.regions.push_back(read_region(regions.elem(i), bin, expected, i));
    total += f.regions.back().size;  // each at most 2^44: no wrap for any count a 64 MiB file holds
    if (total > kMaxRegionBytes) corrupt("its regions add up to more memory than any GPU has");
  }
  if (expected && f.regions.size() != expected->regions.size())
    input_error(fmt::format("the capture's footprint was measured on another capture ({} regions instead of {}); "
                            "measure it again with `kerncap footprint OUT --force`",
                            f.regions.size(), expected->regions.size()));
  const JsonField escapes = top.at("escapes");
  for (size_t i = 0, n = escapes.array_size(); i < n; ++i) {
    const JsonField ej = escapes.elem(i);
    Escape e;
    e.address = hex_field(ej.at("address"));
    e.pc = hex_field(ej.at("pc"));
    e.size = ej.at("size").u32();
    e.read = ej.at("read").boolean();
    e.write = ej.at("write").boolean();
    e.atomic = ej.at("atomic").boolean();
    e.nearest = ej.at("nearest").str();
    f.escapes.push_back(std::move(e));
  }
  if (f.escapes.size() > f.escape_count) corrupt("footprint.json lists more escapes than it counts");
  return f;
}

}  // namespace

Footprint read_footprint(const fs::path& dir, const Manifest* expected) {
  const FootprintLock lock(dir, false);  // the json and the bin of one writer
  try {
    return read_checked(dir, expected);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // json, filesystem, allocation: still the file's fault
    corrupt(e.what());
  }
}

}  // namespace kerncap::format
