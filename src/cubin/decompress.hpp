#pragma once
// The two codecs fatbinary uses for compressed entries (CUDA 13):
//   flag 0x2000: an LZ4 *block* (no frame): `nvcc --compress-mode=speed`, and older CUDA
//   flag 0x8000: a zstd frame: the CUDA 12.8+ default (`default`, `size`, `balance`)
// Fatbins come from captures people hand around and from every module the application
// loads, so a crafted entry must not make us allocate what it asks for: a 33 KB zstd frame
// of RLE blocks expands to 1 GiB. Output is bounded three ways: by the size the entry
// header declares, by a per-entry ceiling and by a budget for the whole fatbin (shared by
// its entries). Crossing any of them is Error(Input) before the memory is taken.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kerncap::cubin::detail {

// No real code object entry is near 256 MiB (the largest cuBLAS/cuDNN cubins are tens of MiB).
inline constexpr uint64_t kMaxEntryDecompressed = uint64_t{256} << 20;
// The budget of one fatbin: kFatbinExpansion times its stored size, at least
// kMinFatbinBudget (one large entry always fits) and never more than kMaxFatbinBudget.
// Real entries compress 3-10x; a bomb gets at most max(256 MiB, 64 x its own size).
inline constexpr uint64_t kFatbinExpansion = 64;
inline constexpr uint64_t kMinFatbinBudget = kMaxEntryDecompressed;
inline constexpr uint64_t kMaxFatbinBudget = uint64_t{4} << 30;

// What decompression may still produce; shared by the entries of one fatbin.
class DecompressBudget {
 public:
  DecompressBudget(uint64_t per_entry, uint64_t total) : per_entry_(per_entry), left_(total), total_(total) {}
  // The default budget for a fatbin of `stored` bytes.
  static DecompressBudget for_fatbin(uint64_t stored);

  // The most one entry may produce now.
  uint64_t entry_cap() const { return per_entry_ < left_ ? per_entry_ : left_; }
  // Errors (Input) unless `declared` bytes fit; describes which limit was crossed.
  void check(uint64_t declared, std::string_view what, std::string_view codec) const;
  void spend(uint64_t n) { left_ -= n < left_ ? n : left_; }

  uint64_t per_entry() const { return per_entry_; }
  uint64_t total() const { return total_; }

 private:
  uint64_t per_entry_, left_, total_;
};

// `expected` is the entry header's uncompressed size. LZ4 needs it; for zstd 0 means
// unknown (then the entry may produce up to the budget's entry cap).
std::vector<uint8_t> lz4_block_decompress(std::span<const uint8_t> in, uint64_t expected, DecompressBudget& budget,
                                          std::string_view what);
std::vector<uint8_t> zstd_decompress(std::span<const uint8_t> in, uint64_t expected, DecompressBudget& budget,
                                     std::string_view what);

}  // namespace kerncap::cubin::detail
