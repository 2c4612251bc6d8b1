#pragma once
// The two codecs fatbinary uses for compressed entries (CUDA 13):
//   flag 0x2000: an LZ4 *block* (no frame): `nvcc --compress-mode=speed`, and older CUDA
//   flag 0x8000: a zstd frame: the CUDA 12.8+ default (`default`, `size`, `balance`)
// Output grows only as real data decodes, so a lying size field cannot make us allocate
// gigabytes; the result must come out exactly `expected` bytes long (when it is known).
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kerncap::cubin::detail {

inline constexpr uint64_t kMaxDecompressed = uint64_t{1} << 30;  // no real code object is near 1 GiB

std::vector<uint8_t> lz4_block_decompress(std::span<const uint8_t> in, uint64_t expected, std::string_view what);
// expected == 0: unknown, bounded by kMaxDecompressed.
std::vector<uint8_t> zstd_decompress(std::span<const uint8_t> in, uint64_t expected, std::string_view what);

}  // namespace kerncap::cubin::detail
