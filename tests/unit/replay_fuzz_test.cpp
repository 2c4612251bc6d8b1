// Fuzzed inputs: which bytes are randomised, with what values, the same in every piece.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "common/error.hpp"
#include "replay/fuzz.hpp"

namespace kerncap::replay {
namespace {

// Region 0: 64 bytes, the first 32 read only (an input), bytes 32..64 written (an output).
format::Manifest manifest() {
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x1000, 64, "mem/0.bin", 0, ""}};
  return m;
}

format::Footprint footprint() {
  format::Footprint f;
  format::RegionFootprint r;
  r.size = 64;
  r.read = format::Bitmap(4, 64);
  r.written = format::Bitmap(1, 64);
  r.rbw = format::Bitmap(4, 64);
  r.read.set_range(0, 8);
  r.written.set_range(32, 32);
  f.regions.push_back(r);
  return f;
}

TEST(Fuzz, OnlyReadOnlyFloatSpansAreInputs) {
  std::vector<TypedSpan> sig = {{0x1000, 32, compare::DType::F32, {}}, {0x1020, 32, compare::DType::F32, {}}};
  auto in = fuzz_inputs(footprint(), manifest(), sig);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].begin, 0u);
  EXPECT_EQ(in[0].end, 32u);
  std::vector<TypedSpan> ints = {{0x1000, 32, compare::DType::I32, {}}};
  try {
    fuzz_inputs(footprint(), manifest(), ints);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("floating-point inputs"), std::string::npos);
  }
}

TEST(Fuzz, ValuesAreOrderIndependentAndVaried) {
  EXPECT_EQ(fuzz_value(7, 3, 0, 11), fuzz_value(7, 3, 0, 11));
  EXPECT_NE(fuzz_value(7, 3, 0, 11), fuzz_value(7, 4, 0, 11));
  int zeros = 0, large = 0, negative = 0, tiny = 0;
  for (uint64_t i = 0; i < 4000; ++i) {
    double v = fuzz_value(1, 0, 0, i);
    zeros += v == 0;
    large += std::fabs(v) >= 1e3;
    negative += v < 0;
    tiny += v != 0 && std::fabs(v) < 1e-30;
  }
  EXPECT_GT(zeros, 100);
  EXPECT_GT(large, 50);
  EXPECT_GT(negative, 1000);
  EXPECT_GT(tiny, 50);
}

TEST(Fuzz, PiecesOfARestoreGetTheSameBytesAsTheWhole) {
  auto f = footprint();
  std::vector<TypedSpan> sig = {{0x1000, 32, compare::DType::F32, {}}};
  auto in = fuzz_inputs(f, manifest(), sig);
  std::vector<uint8_t> whole(64, 0xEE), split(64, 0xEE);
  apply_fuzz(in, f.regions[0], 5, 2, 0, 0, whole.data(), 64);
  apply_fuzz(in, f.regions[0], 5, 2, 0, 0, split.data(), 12);
  apply_fuzz(in, f.regions[0], 5, 2, 0, 12, split.data() + 12, 52);
  EXPECT_EQ(whole, split);
  for (size_t i = 32; i < 64; ++i) EXPECT_EQ(whole[i], 0xEE) << i;  // outputs untouched
  float x0;
  std::memcpy(&x0, whole.data(), 4);
  EXPECT_EQ(x0, static_cast<float>(fuzz_value(5, 2, 0, 0)));
}

}  // namespace
// Reads and writes far into a long span (past whole bitmap words, at odd bits) decide as
// near its start: the bitmaps are scanned a word at a time where words are whole.
TEST(Fuzz, InputsAreFoundAcrossBitmapWords) {
  const uint64_t size = 8192;
  format::Manifest m;
  m.regions = {{0, format::MemKind::Device, 0x1000, size, "mem/0.bin", 0, ""}};
  auto fp = [&](uint64_t read_granule, std::optional<uint64_t> written_byte) {
    format::Footprint f;
    format::RegionFootprint r;
    r.size = size;
    r.read = format::Bitmap(4, size);
    r.written = format::Bitmap(1, size);
    r.rbw = format::Bitmap(4, size);
    r.read.set(read_granule);
    if (written_byte) r.written.set(*written_byte);
    f.regions.push_back(r);
    return f;
  };
  const std::vector<TypedSpan> sig = {{0x1000 + 100, size - 100, compare::DType::F32, {}}};
  EXPECT_EQ(fuzz_inputs(fp(1500, std::nullopt), m, sig).size(), 1u);       // read far in: an input
  EXPECT_THROW(fuzz_inputs(fp(1500, 8191), m, sig), Error);               // written at its end: an output
  EXPECT_EQ(fuzz_inputs(fp(1500, 99), m, sig).size(), 1u);                // a write before the span is not its
  EXPECT_THROW(fuzz_inputs(fp(24, std::nullopt), m, sig), Error);         // bytes 96..100: before it
  EXPECT_EQ(fuzz_inputs(fp(25, std::nullopt), m, sig).size(), 1u);        // bytes 100..104: its first
}

}  // namespace kerncap::replay
