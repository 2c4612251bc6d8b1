// parse_fatbin: the container fatbinary writes (nvcc -fatbin, the .nv_fatbin section of
// host objects and libraries). Layout, all little endian, as CUDA 13.0 writes it:
//
//   container header (16 bytes)
//     0x00 u32 magic 0xBA55ED50    0x04 u16 version (1)    0x06 u16 header size (16)
//     0x08 u64 bytes of entries that follow the header
//   then entries back to back, each a header and its payload:
//     0x00 u16 kind: 1 PTX, 2 ELF (cubin), 8 LTO IR      0x02 u16 version (0x0101)
//     0x04 u32 header size (64; 72+ with a file name; 80 PTX; 112 sm_100+ ELF)
//     0x08 u64 payload size in the file (padded to 8)
//     0x10 u32 payload size before padding when compressed (0 otherwise)
//     0x14 u32 offset of the header's extended part (0x40) or 0
//     0x18 u16 minor, 0x1a u16 major: ELF version (1.8) or PTX ISA version (9.0)
//     0x1c u32 sm (80, 90, 100, ...)
//     0x20 u32 offset of the source file name in the header, 0x24 u32 its length (-G)
//     0x28 u64 flags: 0x1 64-bit, 0x2 debug, 0x10 Linux host, 0x2000 LZ4, 0x8000 zstd
//          (LTO IR entries also carry 0x10000 and a payload that is not plain zstd)
//     0x38 u64 uncompressed size (0 when not compressed)
//   Containers may be concatenated (libraries hold thousands), with zero padding between.
// The 0x466243B1 "wrapper" (.nvFatBinSegment) holds only pointers to a container.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "cubin/bytes.hpp"
#include "cubin/cubin.hpp"
#include "cubin/decompress.hpp"
#include "cubin/fatbin_layout.hpp"
#include "cubin/fatbin_limits.hpp"

namespace kerncap::cubin {

using namespace detail;

namespace {

ImageKind entry_kind(uint16_t raw) {
  switch (raw) {
    case kFatbinKindPtx: return ImageKind::Ptx;
    case kFatbinKindElf: return ImageKind::Cubin;
    default: return ImageKind::Unknown;
  }
}

std::vector<uint8_t> payload(const Bytes& e, uint64_t hs, uint64_t padded, FatbinEntry& out, DecompressBudget& budget) {
  const uint32_t stored = e.u32(0x10, "stored size");
  const uint64_t uncompressed = e.u64(0x38, "uncompressed size");
  if (stored > padded) e.fail("stored size", fmt::format("{} exceeds the payload ({})", stored, padded));
  const uint64_t len = stored ? stored : padded;
  const auto data = e.sub(hs, len, "payload");
  // LTO IR (kind 8) sets the zstd bit but is not a zstd frame (NVIDIA obfuscates it):
  // only code kerncap reads is decompressed, the rest is kept as stored.
  if (out.kind == ImageKind::Unknown) {
    out.compressed = (out.flags & (kFatbinFlagZstd | kFatbinFlagLz4)) != 0;
    return {data.begin(), data.end()};
  }
  if (out.flags & kFatbinFlagZstd) {
    out.compressed = true;
    return zstd_decompress(data, uncompressed, budget, e.what());
  }
  if (out.flags & kFatbinFlagLz4) {
    out.compressed = true;
    return lz4_block_decompress(data, uncompressed, budget, e.what());
  }
  return {data.begin(), data.end()};
}

void read_entries(const Bytes& c, uint64_t first, uint64_t end, std::vector<FatbinEntry>& out,
                  DecompressBudget& budget) {
  uint64_t at = first;
  while (at < end) {
    const std::string what = fmt::format("{} entry {}", c.what(), out.size());
    if (end - at < kFatbinEntryMin) Bytes(c.all(), what).fail("entry header", "truncated");
    const Bytes e(c.sub(at, end - at, "entry"), what);
    const uint32_t hs = e.u32(0x04, "header size");
    const uint64_t padded = e.u64(0x08, "payload size");
    if (hs < kFatbinEntryMin || hs > e.size())
      e.fail("header size", fmt::format("{} is not between {} and {}", hs, kFatbinEntryMin, e.size()));
    if (padded > e.size() - hs)
      e.fail("payload size", fmt::format("{} bytes run past the container ({} left)", padded, e.size() - hs));
    FatbinEntry f;
    f.raw_kind = e.u16(0x00, "kind");
    f.kind = entry_kind(f.raw_kind);
    f.sm = static_cast<int>(std::min<uint32_t>(e.u32(0x1c, "sm"), 10000));
    f.flags = e.u64(0x28, "flags");
    f.bytes = payload(e, hs, padded, f, budget);
    out.push_back(std::move(f));
    at += hs + padded;
  }
}

bool all_zero(std::span<const uint8_t> s) {
  return std::all_of(s.begin(), s.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

std::vector<FatbinEntry> parse_fatbin(std::span<const uint8_t> image) {
  DecompressBudget budget = DecompressBudget::for_fatbin(image.size());
  return detail::parse_fatbin(image, budget);
}

std::vector<FatbinEntry> detail::parse_fatbin(std::span<const uint8_t> image, DecompressBudget& budget) {
  const Bytes b(image, "fatbin");
  std::vector<FatbinEntry> out;
  uint64_t at = 0;
  while (at < b.size()) {
    // Only zero padding may follow the last container (sections are padded to alignment).
    const bool padding = at > 0 && all_zero(image.subspan(at, std::min<uint64_t>(b.size() - at, 16)));
    if (padding && all_zero(image.subspan(at))) break;
    if (!b.has(at, kFatbinHeaderSize)) b.fail("container header", fmt::format("truncated at {:#x}", at));
    const uint32_t magic = b.u32(at, "magic");
    if (magic == kFatbinWrapperMagic)
      b.fail("magic", "this is a fatbin wrapper (0x466243B1), which only points at its container; "
                      "pass the container (magic 0xBA55ED50) it points to");
    if (magic != kFatbinMagic)
      b.fail("magic", fmt::format("{:#010x} at {:#x} is not a fatbin container (0xBA55ED50)", magic, at));
    const uint16_t hs = b.u16(at + 6, "header size");
    const uint64_t size = b.u64(at + 8, "container size");
    if (hs < kFatbinHeaderSize) b.fail("header size", fmt::format("{} is below 16", hs));
    if (!b.has(at + hs, size)) b.fail("container size", fmt::format("{} bytes at {:#x} run past the end", size, at + hs));
    const Bytes c(image.subspan(at, hs + size), fmt::format("fatbin container at {:#x}", at));
    read_entries(c, hs, hs + size, out, budget);
    at += hs + size;
    while (at < b.size() && at % 8 != 0 && image[at] == 0) ++at;  // alignment between containers
  }
  return out;
}

}  // namespace kerncap::cubin
