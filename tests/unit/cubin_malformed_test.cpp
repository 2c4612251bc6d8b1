// Damaged input must end in Error(Input), never a crash, hang or other exception: the
// reader runs inside the captured application and on files users hand us.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "cubin_fixtures.hpp"

namespace kerncap::cubin {
namespace {

using testing::fixture;

// Parses every way the tools do; returns whether it succeeded. Anything but success or
// Error(Input) fails the test.
bool survives(std::span<const uint8_t> data, const std::string& label) {
  try {
    (void)detect_kind(data);
    (void)parse_image(data, 90);
    (void)kernel_names(data);
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << label << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": unexpected exception " << e.what();
  }
  return false;
}

void expect_input_error(std::span<const uint8_t> data, const std::string& label) {
  EXPECT_FALSE(survives(data, label)) << label << " was accepted";
}

TEST(CubinMalformed, Garbage) {
  expect_input_error({}, "empty");
  const std::vector<uint8_t> zeros(64, 0);
  expect_input_error(zeros, "zeros");
  std::vector<uint8_t> elf_magic{0x7f, 'E', 'L', 'F'};
  expect_input_error(elf_magic, "ELF magic only");
  elf_magic.resize(64, 0);
  elf_magic[4] = 2;
  elf_magic[5] = 1;
  expect_input_error(elf_magic, "ELF header, no sections");
  std::vector<uint8_t> fat{0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0};
  expect_input_error(fat, "fatbin container larger than the file");
  const std::vector<uint8_t> wrapper{0xb1, 0x43, 0x62, 0x46, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(detect_kind(wrapper), ImageKind::Fatbin);
  try {
    parse_fatbin(wrapper);
    ADD_FAILURE() << "wrapper accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wrapper"), std::string::npos) << e.what();
  }
}

// A fatbin container around one hand-made LZ4 entry: exercises the block decoder without
// nvcc, including a match that overlaps its own output.
std::vector<uint8_t> lz4_fatbin(const std::vector<uint8_t>& block, uint64_t uncompressed) {
  std::vector<uint8_t> entry(64, 0);
  const uint16_t kind = 1;  // PTX
  const uint32_t hs = 64, stored = static_cast<uint32_t>(block.size()), sm = 90;
  const uint64_t padded = (block.size() + 7) / 8 * 8, flags = 0x2011;
  std::memcpy(&entry[0], &kind, 2);
  std::memcpy(&entry[4], &hs, 4);
  std::memcpy(&entry[8], &padded, 8);
  std::memcpy(&entry[0x10], &stored, 4);
  std::memcpy(&entry[0x1c], &sm, 4);
  std::memcpy(&entry[0x28], &flags, 8);
  std::memcpy(&entry[0x38], &uncompressed, 8);
  entry.insert(entry.end(), block.begin(), block.end());
  entry.resize(64 + padded, 0);
  std::vector<uint8_t> out(16 + entry.size(), 0);
  const uint32_t magic = 0xBA55ED50;
  const uint16_t version = 1, header = 16;
  const uint64_t size = entry.size();
  std::memcpy(&out[0], &magic, 4);
  std::memcpy(&out[4], &version, 2);
  std::memcpy(&out[6], &header, 2);
  std::memcpy(&out[8], &size, 8);
  std::memcpy(&out[16], entry.data(), entry.size());
  return out;
}

TEST(CubinMalformed, Lz4BlockDecoder) {
  // "ab" then a match of 6 at offset 2 ("ababab"), then literal "!": "abababab!"
  const std::vector<uint8_t> block{0x22, 'a', 'b', 0x02, 0x00, 0x10, '!'};
  const auto entries = parse_fatbin(lz4_fatbin(block, 9));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].compressed);
  EXPECT_EQ(std::string(entries[0].bytes.begin(), entries[0].bytes.end()), "abababab!");
  expect_input_error(lz4_fatbin(block, 10), "size mismatch");
  expect_input_error(lz4_fatbin({0x22, 'a', 'b', 0x05, 0x00, 0x10, '!'}, 9), "offset before start");
  expect_input_error(lz4_fatbin({0x22, 'a', 'b', 0x00, 0x00, 0x10, '!'}, 9), "offset zero");
  expect_input_error(lz4_fatbin({0xf0, 0xff, 0xff}, 9), "literal length past end");
  expect_input_error(lz4_fatbin(block, uint64_t{1} << 40), "absurd size");
}

// Every truncation of small files and a sample of large ones.
void truncations(const std::vector<uint8_t>& data, const std::string& name) {
  for (size_t n = 0; n < data.size(); n += n < 512 ? 1 : 97)
    survives(std::span(data).first(n), name + " cut at " + std::to_string(n));
}

void bit_flips(const std::vector<uint8_t>& data, const std::string& name, int rounds) {
  std::mt19937 rng(12345);
  for (int i = 0; i < rounds; ++i) {
    std::vector<uint8_t> d = data;
    // Headers and metadata sit in the first KiBs: flip there more often.
    const size_t span = (i % 2) ? d.size() : std::min<size_t>(d.size(), 4096);
    for (int f = 0; f < 1 + i % 4; ++f) {
      const size_t at = rng() % span;
      d[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    survives(d, name + " flip round " + std::to_string(i));
  }
}

TEST(CubinMalformed, TruncatedFixtures) {
  KC_NEED_FIXTURES();
  for (const char* f : {"kernels_sm90.cubin", "rdc_sm90.cubin", "multi.fatbin", "multi_zstd.fatbin",
                        "multi_lz4.fatbin", "lto.fatbin", "kernels.ptx"})
    truncations(fixture(f), f);
}

TEST(CubinMalformed, BitFlippedFixtures) {
  KC_NEED_FIXTURES();
  for (const char* f : {"kernels_sm90.cubin", "kernels_sm80.cubin", "multi.fatbin", "multi_zstd.fatbin",
                        "multi_lz4.fatbin", "kernels.ptx"})
    bit_flips(fixture(f), f, 600);
}

// A cubin cut before its section table must be refused outright (nvcc writes the table
// near the end, followed only by program headers, which the reader does not need).
TEST(CubinMalformed, TruncatedCubinIsRefused) {
  KC_NEED_FIXTURES();
  const auto elf = fixture("kernels_sm90.cubin");
  for (size_t n : {size_t{0}, size_t{16}, size_t{63}, size_t{64}, elf.size() / 2})
    expect_input_error(std::span(elf).first(n), "cubin cut at " + std::to_string(n));
}

}  // namespace
}  // namespace kerncap::cubin
