// parse_cubin against cubins nvcc built from tests/fixtures/cubin/kernels.cu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "cubin/cubin.hpp"
#include "cubin_fixtures.hpp"

namespace kerncap::cubin {
namespace {

using testing::fixture;

struct P {
  uint32_t offset, size;
};

void expect_params(const Image& img, const std::string& name, std::vector<P> want, uint32_t bytes) {
  const KernelInfo* k = img.find_kernel(name);
  ASSERT_NE(k, nullptr) << name;
  ASSERT_EQ(k->params.size(), want.size()) << name;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(k->params[i].ordinal, i) << name;
    EXPECT_EQ(k->params[i].offset, want[i].offset) << name << " param " << i;
    EXPECT_EQ(k->params[i].size, want[i].size) << name << " param " << i;
  }
  EXPECT_EQ(k->param_bytes, bytes) << name;
}

// The same source must read the same on every SM (only shared-memory accounting differs).
class CubinPerSm : public ::testing::TestWithParam<std::string> {};

TEST_P(CubinPerSm, ParameterLayouts) {
  KC_NEED_FIXTURES();
  const Image img = parse_cubin(fixture("kernels_" + GetParam() + ".cubin"));
  expect_params(img, "k_mixed", {{0, 4}, {8, 8}, {16, 8}, {24, 40}}, 64);
  expect_params(img, "k_big", {{0, 320}, {320, 8}}, 328);
  expect_params(img, "k_grid_const", {{0, 320}, {320, 8}}, 328);
  expect_params(img, "k_huge", {{0, 4}, {4, 20000}, {20008, 8}}, 20016);  // KPARAM_INFO_V2
  expect_params(img, "k_align", {{0, 1}, {16, 16}, {32, 2}, {48, 16}, {64, 8}}, 72);
  expect_params(img, "_Z5k_cppPfi", {{0, 8}, {8, 4}}, 12);
  expect_params(img, "_Z7k_emptyv", {}, 0);
  expect_params(img, "_Z6k_tmplILi7EEvPf", {{0, 8}}, 8);
}

TEST_P(CubinPerSm, KernelListAndResources) {
  KC_NEED_FIXTURES();
  const Image img = parse_cubin(fixture("kernels_" + GetParam() + ".cubin"));
  EXPECT_EQ(img.kind, ImageKind::Cubin);
  EXPECT_EQ(img.code_kind, ImageKind::Cubin);
  std::vector<std::string> names;
  for (const auto& k : img.kernels) names.push_back(k.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"_Z5k_cppPfi", "_Z6k_tmplILi7EEvPf", "_Z7k_emptyv", "k_align", "k_big",
                                             "k_grid_const", "k_huge", "k_local", "k_mixed"}));
  for (const auto& k : img.kernels) {
    EXPECT_GT(k.registers, 0) << k.name;
    EXPECT_GT(k.code_bytes, 0u) << k.name;
    EXPECT_GE(k.local_bytes, 0) << k.name;
    EXPECT_EQ(k.cluster_dims, (std::array<uint32_t, 3>{0, 0, 0})) << k.name;
  }
  EXPECT_EQ(img.find_kernel("k_big")->max_threads, 128);  // __launch_bounds__(128)
  EXPECT_EQ(img.find_kernel("k_mixed")->max_threads, -1);
  EXPECT_EQ(img.find_kernel("k_local")->local_bytes, 400);  // int loc[100]
  EXPECT_EQ(img.find_kernel("k_mixed")->local_bytes, 40);   // the S40 copy
  EXPECT_EQ(img.find_kernel("_Z7k_emptyv")->local_bytes, 0);
  EXPECT_EQ(img.find_kernel("k_mixed")->shared_static_bytes, 1024);  // float tile[256]
  EXPECT_EQ(img.find_kernel("k_big")->shared_static_bytes, 0);
  EXPECT_EQ(img.find_kernel("k_local")->shared_reserved_bytes, 0);
  EXPECT_EQ(img.find_kernel("no_such_kernel"), nullptr);
}

TEST_P(CubinPerSm, Globals) {
  KC_NEED_FIXTURES();
  const Image img = parse_cubin(fixture("kernels_" + GetParam() + ".cubin"));
  auto find = [&](const std::string& n) -> const GlobalVar* {
    for (const auto& g : img.globals)
      if (g.name == n) return &g;
    return nullptr;
  };
  ASSERT_EQ(img.globals.size(), 5u);
  const GlobalVar* arr = find("dev_arr");
  ASSERT_TRUE(arr);
  EXPECT_EQ(arr->size, 400u);
  EXPECT_FALSE(arr->constant);
  EXPECT_EQ(arr->section, ".nv.global");
  const GlobalVar* init = find("dev_init");
  ASSERT_TRUE(init);
  EXPECT_EQ(init->size, 4u);
  EXPECT_EQ(init->section, ".nv.global.init");
  ASSERT_TRUE(find("dev_table"));
  EXPECT_EQ(find("dev_table")->size, 24u);
  const GlobalVar* c = find("const_c");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->size, 256u);
  EXPECT_TRUE(c->constant);
  EXPECT_EQ(c->section, ".nv.constant3");
  const GlobalVar* m = find("managed_v");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size, 16u);
  EXPECT_TRUE(m->managed);
  EXPECT_FALSE(arr->managed);
}

INSTANTIATE_TEST_SUITE_P(Sms, CubinPerSm, ::testing::Values("sm80", "sm90", "sm90a", "sm100"));

TEST(Cubin, SmFromElfFlags) {
  KC_NEED_FIXTURES();
  EXPECT_EQ(parse_cubin(fixture("kernels_sm80.cubin")).sm, 80);
  EXPECT_EQ(parse_cubin(fixture("kernels_sm90.cubin")).sm, 90);
  EXPECT_EQ(parse_cubin(fixture("kernels_sm90a.cubin")).sm, 90);
  EXPECT_EQ(parse_cubin(fixture("kernels_sm100.cubin")).sm, 100);
}

TEST(Cubin, ArchSpecificTarget) {
  KC_NEED_FIXTURES();
  EXPECT_TRUE(parse_cubin(fixture("kernels_sm90a.cubin")).arch_specific);
  EXPECT_FALSE(parse_cubin(fixture("kernels_sm90.cubin")).arch_specific);
  EXPECT_FALSE(parse_cubin(fixture("kernels_sm100.cubin")).arch_specific);
}

// CUDA <= 12.x cubins (EI_ABIVERSION 7) keep the SM in the low byte of e_flags.
TEST(Cubin, SmFromOldAbiFlags) {
  KC_NEED_FIXTURES();
  std::vector<uint8_t> elf = fixture("kernels_sm90.cubin");
  elf[8] = 7;                                  // EI_ABIVERSION
  const uint32_t old_flags = 0x005a055a;       // EF_CUDA_SM90 | VIRTUAL_SM(90) | 64-bit
  std::memcpy(elf.data() + 0x30, &old_flags, 4);
  EXPECT_EQ(parse_cubin(elf).sm, 90);
}

// sm_90+: the linked .nv.shared.<kernel> carries the 1 KiB the system reserves.
TEST(Cubin, ReservedSharedMemoryOnSm90) {
  KC_NEED_FIXTURES();
  const Image sm90 = parse_cubin(fixture("kernels_sm90.cubin"));
  EXPECT_EQ(sm90.find_kernel("k_mixed")->shared_reserved_bytes, 1024);
  const Image sm80 = parse_cubin(fixture("kernels_sm80.cubin"));
  EXPECT_EQ(sm80.find_kernel("k_mixed")->shared_reserved_bytes, 0);
  EXPECT_EQ(sm80.find_kernel("k_mixed")->shared_static_bytes, 1024);
}

TEST(Cubin, ClusterDims) {
  KC_NEED_FIXTURES();
  const Image img = parse_cubin(fixture("cluster_sm90.cubin"));
  ASSERT_EQ(img.kernels.size(), 1u);
  EXPECT_EQ(img.kernels[0].name, "k_cluster");
  EXPECT_EQ(img.kernels[0].cluster_dims, (std::array<uint32_t, 3>{2, 1, 1}));
}

// In a relocatable object an extern __device__ function has .text.<name> and
// .nv.info.<name> too; it must not be taken for a kernel.
TEST(Cubin, RelocatableDeviceFunctionIsNotAKernel) {
  KC_NEED_FIXTURES();
  const Image img = parse_cubin(fixture("rdc_sm90.cubin"));
  ASSERT_EQ(img.kernels.size(), 1u);
  EXPECT_EQ(img.kernels[0].name, "k_rdc");
  expect_params(img, "k_rdc", {{0, 8}, {8, 4}}, 12);
  EXPECT_GT(img.kernels[0].registers, 0);
}

TEST(Cubin, DetectKind) {
  KC_NEED_FIXTURES();
  EXPECT_EQ(detect_kind(fixture("kernels_sm90.cubin")), ImageKind::Cubin);
  EXPECT_EQ(detect_kind(fixture("multi.fatbin")), ImageKind::Fatbin);
  EXPECT_EQ(detect_kind(fixture("kernels.ptx")), ImageKind::Ptx);
  EXPECT_STREQ(to_string(ImageKind::Cubin), "cubin");
  EXPECT_STREQ(to_string(ImageKind::Fatbin), "fatbin");
  EXPECT_STREQ(to_string(ImageKind::Ptx), "ptx");
  EXPECT_STREQ(to_string(ImageKind::Unknown), "unknown");
}

}  // namespace
}  // namespace kerncap::cubin
