#pragma once
// The footprint of a captured launch: which bytes of each captured region the kernel read,
// wrote, and read before writing them, measured by `kerncap footprint` (an instrumented
// replay) and kept in the capture directory beside the manifest:
//   footprint.json  version, the capture it belongs to, per-region summaries and the
//                   location of each region's three bitmaps in footprint.bin, escapes
//   footprint.bin   the bitmaps, each run-length or plain encoded (whichever is smaller)
// Both are untrusted input on read: version, sizes, bounds and the bin's hash are checked.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "format/manifest.hpp"

namespace kerncap::format {

inline constexpr int kFootprintVersion = 1;
inline constexpr const char* kFootprintName = "kerncap-footprint";
inline constexpr const char* kFootprintJson = "footprint.json";
inline constexpr const char* kFootprintBin = "footprint.bin";

// Granules of one region: bit i stands for bytes [i*granule, (i+1)*granule) of the region.
// The last granule may reach past the region's end; bytes() clamps it.
// Stored in blocks of kBlockWords words, a block that was never set taking no memory: a
// kernel that reaches into a 32 GiB pool and touches a few MiB of it leaves bitmaps of
// gigabytes that are almost all zero (one bit a byte for `written`).
class Bitmap {
 public:
  static constexpr unsigned kBlockShift = 12;  // 4096 words a block: 256 Ki bits, 32 KiB
  static constexpr uint64_t kBlockWords = uint64_t{1} << kBlockShift;

  Bitmap() = default;
  Bitmap(uint32_t granule, uint64_t region_size);
  // From the device's 32-bit words (bit i of the set is bit i%32 of word i/32).
  static Bitmap from_words32(uint32_t granule, uint64_t region_size, std::span<const uint32_t> words);

  uint32_t granule() const { return granule_; }
  uint64_t region_size() const { return region_size_; }
  uint64_t bits() const { return bits_; }
  void set(uint64_t i);
  void set_range(uint64_t first, uint64_t count);
  bool test(uint64_t i) const {
    const std::vector<uint64_t>& b = blocks_[i >> (6 + kBlockShift)];
    return !b.empty() && ((b[(i >> 6) & (kBlockWords - 1)] >> (i & 63)) & 1);
  }
  uint64_t count() const;
  uint64_t bytes() const;  // region bytes covered by set granules
  // Calls f(first, count) for each maximal run of set bits, in order.
  template <typename F>
  void for_each_run(F&& f) const;
  // Bits [64*w, 64*w + 64) as one word (0 past the end and in blocks never set).
  uint64_t word(uint64_t w) const {
    const std::vector<uint64_t>& b = blocks_[w >> kBlockShift];
    return b.empty() ? 0 : b[w & (kBlockWords - 1)];
  }
  uint64_t word_count() const { return (bits_ + 63) / 64; }
  // Calls f(w, word(w)) for each non-zero word, in order.
  template <typename F>
  void for_each_word(F&& f) const;
  // The first set bit at or after i (bits() when none), the first clear bit at or after i.
  uint64_t next_set(uint64_t i) const;
  uint64_t next_clear(uint64_t i) const;
  // The same bits (an untouched block equals a block of zeros).
  bool operator==(const Bitmap& o) const;

 private:
  uint64_t& word_ref(uint64_t w);  // allocates its block

  uint32_t granule_ = 4;
  uint64_t region_size_ = 0;
  uint64_t bits_ = 0;
  std::vector<std::vector<uint64_t>> blocks_;  // empty: all zero
};

enum class BitmapEncoding { Runs, Raw };
std::string to_string(BitmapEncoding e);
// The smaller of the two encodings: "runs" is a LEB128 count followed by (gap, length) pairs
// (gap from the end of the previous run); "raw" is the bitset, little-endian, bits() bits.
std::vector<uint8_t> encode_bitmap(const Bitmap& b, BitmapEncoding* chosen);
// Throws Error(Input) when the bytes do not decode to exactly `count` bits inside the region.
Bitmap decode_bitmap(std::span<const uint8_t> data, BitmapEncoding enc, uint32_t granule, uint64_t region_size,
                     uint64_t count);

struct RegionFootprint {
  uint32_t id = 0;  // the manifest's region id
  MemKind kind = MemKind::Device;
  uint64_t base = 0;  // captured address
  uint64_t size = 0;
  std::string global;  // symbol, for module globals
  Bitmap read;         // 4-byte granules loaded (atomics count as loads)
  Bitmap written;      // bytes stored (1-byte granules, so a partial-word store names its bytes)
  Bitmap rbw;          // 4-byte granules loaded while some of the loaded bytes were not yet stored
  // The written bytes were found by poisoning the region and replaying (see replay/probe.hpp):
  // the sanitizer saw no access although the kernel holds a pointer to it (TMA bulk copies).
  bool probed = false;

  uint64_t read_bytes() const { return read.bytes(); }
  uint64_t written_bytes() const { return written.bytes(); }
  uint64_t rbw_bytes() const { return rbw.bytes(); }
  // Bytes written whose granule was never read before written: their BEFORE value cannot
  // reach the output, so strong validation may poison them.
  uint64_t write_only_bytes() const;
  Bitmap write_only() const;  // those bytes, 1-byte granules
  // Bytes written whose granule the launch never read at all: what strong validation poisons.
  // A byte written and later read (by another block: a tile status in CUB's onesweep
  // lookback, a flag of a grid-wide handshake) is write-only in the instrumented run's order,
  // but another schedule may read it first; a poison there can send the kernel astray.
  Bitmap never_read() const;
};

// An access that fell (partly) outside every captured region.
struct Escape {
  uint64_t address = 0;  // as the replayed kernel saw it
  uint64_t pc = 0;       // of the instruction
  uint32_t size = 0;
  bool read = false;
  bool write = false;
  bool atomic = false;
  std::string nearest;  // "64 B past the end of region 3 (device 0x7f..)", for the message
};

struct Footprint {
  int version = kFootprintVersion;
  std::string tool_version;
  // The capture it was measured on (checked against the manifest by the footprint library).
  std::string kernel;
  uint64_t image_hash = 0;
  std::string device_name;

  std::vector<RegionFootprint> regions;  // manifest order
  std::vector<Escape> escapes;           // the first ones, bounded
  uint64_t escape_count = 0;             // all of them
  uint64_t accesses = 0;                 // instrumented global accesses executed
  uint64_t kernel_pc = 0;                // the kernel's first instruction (0: unknown); escape
                                         // pc - kernel_pc is the offset nvdisasm shows

  double instrumented_ms = 0;  // the instrumented launch
  double plain_ms = -1;        // the same launch uninstrumented (< 0: not measured)
  double seconds = 0;          // the whole measurement, restore included
  std::string sanitizer_library;
};

// Writes footprint.bin and footprint.json whole under temporary names, then removes the old
// json and renames both in: after a write error (a full disk) the old pair stays and the
// error says so; killed at any moment, a reader sees the old pair, the new one or none, never
// a json beside another footprint's bin (the json names the bin's size and hash).
void write_footprint(const std::filesystem::path& capture_dir, const Footprint& f);
bool footprint_exists(const std::filesystem::path& capture_dir);
// Throws Error(Input) saying what is wrong and to re-measure with `kerncap footprint --force`.
// With the capture's manifest, each region must be the manifest's (id and size) before its
// bitmaps are decoded, so a damaged size never turns into an allocation.
Footprint read_footprint(const std::filesystem::path& capture_dir, const Manifest* expected = nullptr);
nlohmann::json summary_json(const Footprint& f);  // everything but the bitmaps

template <typename F>
void Bitmap::for_each_run(F&& f) const {
  for (uint64_t i = next_set(0); i < bits_;) {
    const uint64_t end = next_clear(i);
    f(i, end - i);
    i = next_set(end);
  }
}

template <typename F>
void Bitmap::for_each_word(F&& f) const {
  for (uint64_t b = 0; b < blocks_.size(); ++b) {
    const std::vector<uint64_t>& words = blocks_[b];
    for (uint64_t k = 0; k < words.size(); ++k)
      if (words[k]) f((b << kBlockShift) + k, words[k]);
  }
}

}  // namespace kerncap::format
