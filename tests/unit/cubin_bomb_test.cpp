// Decompression bombs: fatbin entries whose payload expands far beyond what they declare,
// entries that declare absurd sizes, and many entries that add up. Each must end in
// Error(Input) before the memory is taken (this reader runs inside the application).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "cubin/decompress.hpp"
#include "cubin/fatbin_limits.hpp"

namespace kerncap::cubin {
namespace {

using detail::DecompressBudget;

// A zstd frame of RLE blocks (128 KiB of 'x' per 4 bytes): `bytes` of output, no content
// size, a 128 KiB window. This is how a 33 KB entry becomes 1 GiB.
std::vector<uint8_t> zstd_rle(uint64_t bytes) {
  std::vector<uint8_t> f{0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3};
  constexpr uint64_t kBlock = 128 << 10;
  while (bytes) {
    const uint64_t n = std::min(bytes, kBlock);
    bytes -= n;
    const uint32_t header = (bytes == 0 ? 1u : 0u) | (1u << 1) | static_cast<uint32_t>(n << 3);
    f.push_back(header & 0xff);
    f.push_back((header >> 8) & 0xff);
    f.push_back((header >> 16) & 0xff);
    f.push_back('x');
  }
  return f;
}

// One PTX entry (kind 1) with `payload` stored under `flags`, declaring `uncompressed`.
std::vector<uint8_t> entry(const std::vector<uint8_t>& payload, uint64_t uncompressed, uint64_t flags) {
  std::vector<uint8_t> e(64, 0);
  const uint16_t kind = 1;
  const uint32_t hs = 64, stored = static_cast<uint32_t>(payload.size()), sm = 90;
  const uint64_t padded = (payload.size() + 7) / 8 * 8;
  std::memcpy(&e[0], &kind, 2);
  std::memcpy(&e[4], &hs, 4);
  std::memcpy(&e[8], &padded, 8);
  std::memcpy(&e[0x10], &stored, 4);
  std::memcpy(&e[0x1c], &sm, 4);
  std::memcpy(&e[0x28], &flags, 8);
  std::memcpy(&e[0x38], &uncompressed, 8);
  e.insert(e.end(), payload.begin(), payload.end());
  e.resize(64 + padded, 0);
  return e;
}

std::vector<uint8_t> container(const std::vector<std::vector<uint8_t>>& entries) {
  std::vector<uint8_t> body;
  for (const auto& e : entries) body.insert(body.end(), e.begin(), e.end());
  std::vector<uint8_t> out(16 + body.size(), 0);
  const uint32_t magic = 0xBA55ED50;
  const uint16_t version = 1, header = 16;
  const uint64_t size = body.size();
  std::memcpy(&out[0], &magic, 4);
  std::memcpy(&out[4], &version, 2);
  std::memcpy(&out[6], &header, 2);
  std::memcpy(&out[8], &size, 8);
  std::copy(body.begin(), body.end(), out.begin() + 16);
  return out;
}

constexpr uint64_t kZstd = 0x8011, kLz4 = 0x2011;

std::string input_error_of(const std::vector<uint8_t>& fatbin) {
  try {
    (void)parse_fatbin(fatbin);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(CubinBomb, RleFrameDecodes) {
  const auto es = parse_fatbin(container({entry(zstd_rle(300000), 300000, kZstd)}));
  ASSERT_EQ(es.size(), 1u);
  EXPECT_EQ(es[0].bytes.size(), 300000u);
  EXPECT_EQ(es[0].bytes[299999], 'x');
}

TEST(CubinBomb, ExpandsPastItsDeclaredSize) {
  // Declares 1 MiB, expands to 64 MiB: stopped at 1 MiB.
  const std::string msg = input_error_of(container({entry(zstd_rle(64 << 20), 1 << 20, kZstd)}));
  EXPECT_NE(msg.find("larger than the header says"), std::string::npos) << msg;
}

TEST(CubinBomb, UnknownSizeStopsAtTheEntryCap) {
  // No declared size: the entry may produce up to the cap, and this one wants more.
  DecompressBudget small(1 << 20, 8 << 20);
  const auto fb = container({entry(zstd_rle(4 << 20), 0, kZstd)});
  try {
    (void)detail::parse_fatbin(fb, small);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("limit for one entry"), std::string::npos) << e.what();
  }
}

TEST(CubinBomb, HugeDeclaredSizeIsRefusedUpFront) {
  for (uint64_t declared : {detail::kMaxEntryDecompressed + 1, uint64_t{1} << 30, uint64_t{1} << 40, ~uint64_t{0}}) {
    const std::string z = input_error_of(container({entry(zstd_rle(4096), declared, kZstd)}));
    EXPECT_NE(z.find("limit for one entry"), std::string::npos) << z;
    const std::string l = input_error_of(container({entry({0x10, 'a'}, declared, kLz4)}));
    EXPECT_NE(l.find("limit for one entry"), std::string::npos) << l;
  }
}

TEST(CubinBomb, ManyEntriesShareOneBudget) {
  // Ten entries of 1 MiB each against a 4 MiB budget: the fifth is refused.
  std::vector<std::vector<uint8_t>> es(10, entry(zstd_rle(1 << 20), 1 << 20, kZstd));
  const auto fb = container(es);
  DecompressBudget budget(2 << 20, 4 << 20);
  try {
    (void)detail::parse_fatbin(fb, budget);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("entry 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("decompression budget"), std::string::npos) << e.what();
  }
  // The same entries spread over concatenated containers share the budget too.
  std::vector<uint8_t> concat;
  for (const auto& e : es) {
    const auto c = container({e});
    concat.insert(concat.end(), c.begin(), c.end());
  }
  DecompressBudget again(2 << 20, 4 << 20);
  EXPECT_THROW((void)detail::parse_fatbin(concat, again), Error);
}

TEST(CubinBomb, DefaultBudgetScalesWithTheInput) {
  EXPECT_EQ(DecompressBudget::for_fatbin(1000).total(), detail::kMinFatbinBudget);
  EXPECT_EQ(DecompressBudget::for_fatbin(uint64_t{16} << 20).total(), uint64_t{1} << 30);
  EXPECT_EQ(DecompressBudget::for_fatbin(~uint64_t{0}).total(), detail::kMaxFatbinBudget);
  // Two 200 MiB RLE entries (13 KB of input) exceed the 256 MiB floor: the first decodes,
  // the second (entry 2) is refused without decompressing it.
  constexpr uint64_t k200 = uint64_t{200} << 20;
  const std::string msg = input_error_of(container({entry(zstd_rle(4096), 4096, kZstd), entry(zstd_rle(k200), k200, kZstd),
                                                    entry(zstd_rle(k200), k200, kZstd)}));
  EXPECT_NE(msg.find("entry 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("decompression budget"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kerncap::cubin
