// parse_fatbin / parse_image / kernel_names on fatbins nvcc built with two cubins (sm_80,
// sm_90) and compute_90 PTX, stored plain, zstd-compressed and LZ4-compressed.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "cubin_fixtures.hpp"

namespace kerncap::cubin {
namespace {

using testing::fixture;

const FatbinEntry* entry(const std::vector<FatbinEntry>& es, ImageKind kind, int sm) {
  for (const auto& e : es)
    if (e.kind == kind && e.sm == sm) return &e;
  return nullptr;
}

class FatbinModes : public ::testing::TestWithParam<std::string> {};

TEST_P(FatbinModes, TwoCubinsAndPtx) {
  KC_NEED_FIXTURES();
  const auto es = parse_fatbin(fixture(GetParam()));
  ASSERT_EQ(es.size(), 3u);
  const FatbinEntry* c80 = entry(es, ImageKind::Cubin, 80);
  const FatbinEntry* c90 = entry(es, ImageKind::Cubin, 90);
  const FatbinEntry* ptx = entry(es, ImageKind::Ptx, 90);
  ASSERT_TRUE(c80 && c90 && ptx);
  EXPECT_EQ(c80->raw_kind, 2);
  EXPECT_EQ(ptx->raw_kind, 1);
  // Whatever the storage, what comes out is the plain code object.
  EXPECT_EQ(parse_cubin(c80->bytes).sm, 80);
  EXPECT_EQ(parse_cubin(c90->bytes).sm, 90);
  EXPECT_EQ(detect_kind(ptx->bytes), ImageKind::Ptx);
  EXPECT_EQ(parse_ptx(ptx->bytes).sm, 90);
}

TEST_P(FatbinModes, DecompressedEqualsUncompressed) {
  KC_NEED_FIXTURES();
  const auto plain = parse_fatbin(fixture("multi_none.fatbin"));
  const auto es = parse_fatbin(fixture(GetParam()));
  for (const auto& e : es) {
    const FatbinEntry* p = entry(plain, e.kind, e.sm);
    ASSERT_TRUE(p);
    EXPECT_FALSE(p->compressed);
    // Uncompressed PTX is NUL-padded to 8 bytes; compare the text.
    auto text = [](const std::vector<uint8_t>& b) { return std::string(b.begin(), std::find(b.begin(), b.end(), 0)); };
    if (e.kind == ImageKind::Ptx)
      EXPECT_EQ(text(e.bytes), text(p->bytes)) << GetParam();
    else
      EXPECT_EQ(e.bytes, p->bytes) << GetParam() << " sm_" << e.sm;
  }
}

INSTANTIATE_TEST_SUITE_P(Storage, FatbinModes,
                         ::testing::Values("multi.fatbin", "multi_none.fatbin", "multi_zstd.fatbin", "multi_lz4.fatbin"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return p.param.substr(0, p.param.find('.'));
                         });

TEST(Fatbin, CompressionFlags) {
  KC_NEED_FIXTURES();
  for (const auto& e : parse_fatbin(fixture("multi_zstd.fatbin"))) {
    EXPECT_TRUE(e.compressed);
    EXPECT_TRUE(e.flags & 0x8000);
  }
  for (const auto& e : parse_fatbin(fixture("multi_lz4.fatbin"))) {
    EXPECT_TRUE(e.compressed);
    EXPECT_TRUE(e.flags & 0x2000);
  }
  // CUDA 13's default: PTX compressed, cubins stored plain.
  for (const auto& e : parse_fatbin(fixture("multi.fatbin"))) EXPECT_EQ(e.compressed, e.kind == ImageKind::Ptx);
}

TEST(Fatbin, ParseImagePicksTheDriversCubin) {
  KC_NEED_FIXTURES();
  const auto fb = fixture("multi_zstd.fatbin");
  const Image exact = parse_image(fb, 90);
  EXPECT_EQ(exact.kind, ImageKind::Fatbin);
  EXPECT_EQ(exact.code_kind, ImageKind::Cubin);
  EXPECT_EQ(exact.sm, 90);
  EXPECT_EQ(exact.find_kernel("k_mixed")->shared_reserved_bytes, 1024);  // really the sm_90 one
  EXPECT_EQ(parse_image(fb, 80).sm, 80);
  EXPECT_EQ(parse_image(fb, 86).sm, 80);  // same major, lower minor: binary compatible
  EXPECT_EQ(parse_image(fb, 0).sm, 90);   // no SM given: the highest
  // sm_100 cannot run either cubin, but can JIT the compute_90 PTX.
  const Image jit = parse_image(fb, 100);
  EXPECT_EQ(jit.code_kind, ImageKind::Ptx);
  EXPECT_EQ(jit.sm, 90);
  ASSERT_NE(jit.find_kernel("k_huge"), nullptr);
  EXPECT_EQ(jit.find_kernel("k_huge")->param_bytes, 20016u);
  try {
    parse_image(fb, 75);
    FAIL() << "sm_75 cannot run anything in this fatbin";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("sm_80, sm_90, compute_90"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sm_75"), std::string::npos) << e.what();
  }
}

TEST(Fatbin, KernelNamesOfEveryKind) {
  KC_NEED_FIXTURES();
  std::vector<std::string> want{"_Z5k_cppPfi", "_Z6k_tmplILi7EEvPf", "_Z7k_emptyv", "k_align", "k_big",
                                "k_grid_const", "k_huge", "k_local", "k_mixed"};
  for (const char* f : {"multi.fatbin", "multi_lz4.fatbin", "kernels_sm90.cubin", "kernels.ptx"}) {
    auto names = kernel_names(fixture(f));
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, want) << f;
  }
}

TEST(Fatbin, LtoIrIsPassedOver) {
  KC_NEED_FIXTURES();
  const auto fb = fixture("lto.fatbin");
  const auto es = parse_fatbin(fb);
  ASSERT_EQ(es.size(), 2u);
  const auto lto = std::find_if(es.begin(), es.end(), [](const FatbinEntry& e) { return e.raw_kind == 8; });
  ASSERT_NE(lto, es.end());
  EXPECT_EQ(lto->kind, ImageKind::Unknown);
  EXPECT_FALSE(lto->bytes.empty());
  EXPECT_EQ(parse_image(fb, 90).code_kind, ImageKind::Cubin);
  EXPECT_EQ(kernel_names(fb).size(), 9u);
  try {
    parse_image(fb, 80);
    FAIL() << "nothing in it runs on sm_80";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LTO IR for sm_90 (unreadable)"), std::string::npos) << e.what();
  }
}

// Libraries concatenate containers in one .nv_fatbin section, padded with zeros.
TEST(Fatbin, ConcatenatedContainers) {
  KC_NEED_FIXTURES();
  auto a = fixture("multi_zstd.fatbin");
  const auto b = fixture("multi_lz4.fatbin");
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), 24, 0);
  EXPECT_EQ(parse_fatbin(a).size(), 6u);
}

}  // namespace
}  // namespace kerncap::cubin
