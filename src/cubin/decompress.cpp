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

std::string mib(uint64_t n) { return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20)); }

}  // namespace

DecompressBudget DecompressBudget::for_fatbin(uint64_t stored) {
  const uint64_t scaled = stored > kMaxFatbinBudget / kFatbinExpansion ? kMaxFatbinBudget : stored * kFatbinExpansion;
  return {kMaxEntryDecompressed, std::clamp(scaled, kMinFatbinBudget, kMaxFatbinBudget)};
}

void DecompressBudget::check(uint64_t declared, std::string_view what, std::string_view codec) const {
  if (declared <= entry_cap()) return;
  if (declared > per_entry_)
    input_error(fmt::format("{}: {} entry would expand to {} bytes, over the {} limit for one entry; refusing it "
                            "(a damaged or crafted fatbin: no real code object is that large)",
                            what, codec, declared, mib(per_entry_)));
  input_error(fmt::format("{}: {} entry would expand to {} bytes, past what is left ({}) of the fatbin's {} "
                          "decompression budget; refusing it (a damaged or crafted fatbin)",
                          what, codec, declared, mib(left_), mib(total_)));
}

// LZ4 block format: sequences of {token, literal length+, literals, u16 offset, match
// length+}; the last sequence has literals only. Matches may overlap their own output.
std::vector<uint8_t> lz4_block_decompress(std::span<const uint8_t> in, uint64_t expected, DecompressBudget& budget,
                                          std::string_view what) {
  if (expected == 0) corrupt(what, "LZ4", "the header gives no uncompressed size");
  budget.check(expected, what, "LZ4");
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
  budget.spend(out.size());
  return out;
}

std::vector<uint8_t> zstd_decompress(std::span<const uint8_t> in, uint64_t expected, DecompressBudget& budget,
                                     std::string_view what) {
  budget.check(expected, what, "zstd");
  const uint64_t limit = expected ? expected : budget.entry_cap();
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  if (!ctx) fail(ErrorKind::Internal, "ZSTD_createDCtx failed (out of memory?)");
  // The frame's window is a buffer zstd allocates itself: compressors shrink it to the
  // content, so it need not exceed the output by much (1 MiB at least, for frames written
  // without a size); a frame cannot make us allocate a window the output would not fill.
  int window_log = 20;
  while (window_log < 27 && (uint64_t{1} << window_log) < limit) ++window_log;
  ZSTD_DCtx_setParameter(ctx, ZSTD_d_windowLogMax, window_log + 1);
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
  if (ret != 0) {
    if (!expected && out.size() == limit) budget.check(limit + 1, what, "zstd");  // says which limit
    corrupt(what, "zstd", "the frame is incomplete or larger than the header says");
  }
  if (expected && out.size() != expected)
    corrupt(what, "zstd", fmt::format("{} bytes decoded, the header says {}", out.size(), expected));
  budget.spend(out.size());
  return out;
}

}  // namespace kerncap::cubin::detail
