#include "cubin/decompress.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <zstd.h>

#include "common/error.hpp"

namespace kerncap::cubin::detail {

namespace {

[[noreturn]] void corrupt(std::string_view what, std::string_view codec, std::string_view problem) {
  input_error(fmt::format("{}: {} data is corrupt: {} (the fatbin is damaged; extract it again)", what, codec,
                          problem));
}

}  // namespace

// LZ4 block format: sequences of {token, literal length+, literals, u16 offset, match
// length+}; the last sequence has literals only. Matches may overlap their own output.
std::vector<uint8_t> lz4_block_decompress(std::span<const uint8_t> in, uint64_t expected, std::string_view what) {
  if (expected == 0 || expected > kMaxDecompressed) corrupt(what, "LZ4", "implausible uncompressed size");
  std::vector<uint8_t> out;
  out.reserve(std::min<uint64_t>(expected, in.size() * 4 + 64));
  size_t ip = 0;
  auto length = [&](size_t base) {
    size_t n = base;
    if (base != 15) return n;
    for (;;) {
      if (ip >= in.size()) corrupt(what, "LZ4", "length runs past the end");
      const uint8_t b = in[ip++];
      n += b;
      if (n > expected) corrupt(what, "LZ4", "length exceeds the uncompressed size");
      if (b != 255) return n;
    }
  };
  while (ip < in.size()) {
    const uint8_t token = in[ip++];
    const size_t lit = length(token >> 4);
    if (lit > in.size() - ip || lit > expected - out.size()) corrupt(what, "LZ4", "literals run past the end");
    out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(ip), in.begin() + static_cast<std::ptrdiff_t>(ip + lit));
    ip += lit;
    if (ip == in.size()) break;  // the last sequence: literals only
    if (in.size() - ip < 2) corrupt(what, "LZ4", "match offset runs past the end");
    const size_t offset = in[ip] | (size_t{in[ip + 1]} << 8);
    ip += 2;
    if (offset == 0 || offset > out.size()) corrupt(what, "LZ4", "match offset points before the start");
    const size_t match = length(token & 15) + 4;
    if (match > expected - out.size()) corrupt(what, "LZ4", "match runs past the uncompressed size");
    const size_t from = out.size() - offset;
    for (size_t i = 0; i < match; ++i) out.push_back(out[from + i]);
  }
  if (out.size() != expected)
    corrupt(what, "LZ4", fmt::format("{} bytes decoded, the header says {}", out.size(), expected));
  return out;
}

std::vector<uint8_t> zstd_decompress(std::span<const uint8_t> in, uint64_t expected, std::string_view what) {
  const uint64_t limit = expected ? expected : kMaxDecompressed;
  if (limit > kMaxDecompressed) corrupt(what, "zstd", "implausible uncompressed size");
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  if (!ctx) fail(ErrorKind::Internal, "ZSTD_createDCtx failed (out of memory?)");
  std::vector<uint8_t> out;
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  size_t ret = 0;
  for (;;) {
    // Grow geometrically (at most 1 MiB a step) up to the limit; a final call with no room
    // lets zstd consume the frame's end (checksum) and say it is done.
    const size_t used = out.size();
    const uint64_t room = std::min<uint64_t>({limit - used, std::max<uint64_t>(used, 4096), uint64_t{1} << 20});
    out.resize(used + static_cast<size_t>(room));
    ZSTD_outBuffer dst{out.data(), out.size(), used};
    const size_t in_before = src.pos;
    ret = ZSTD_decompressStream(ctx, &dst, &src);
    out.resize(dst.pos);
    if (ZSTD_isError(ret)) {
      ZSTD_freeDCtx(ctx);
      corrupt(what, "zstd", ZSTD_getErrorName(ret));
    }
    if (ret == 0) break;                                 // frame complete
    if (dst.pos == used && src.pos == in_before) break;  // stuck: truncated, or too big
  }
  ZSTD_freeDCtx(ctx);
  if (ret != 0) corrupt(what, "zstd", "the frame is incomplete or larger than the header says");
  if (expected && out.size() != expected)
    corrupt(what, "zstd", fmt::format("{} bytes decoded, the header says {}", out.size(), expected));
  return out;
}

}  // namespace kerncap::cubin::detail
