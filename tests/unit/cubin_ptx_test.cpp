// parse_ptx: names and parameter layout from PTX text must match what ptxas put in the
// cubin built from the same source.
#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "cubin_fixtures.hpp"

namespace kerncap::cubin {
namespace {

using testing::fixture;

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(Ptx, LayoutMatchesTheCubin) {
  KC_NEED_FIXTURES();
  const Image ptx = parse_ptx(fixture("kernels.ptx"));
  const Image elf = parse_cubin(fixture("kernels_sm90.cubin"));
  EXPECT_EQ(ptx.kind, ImageKind::Ptx);
  EXPECT_EQ(ptx.sm, 90);
  ASSERT_EQ(ptx.kernels.size(), elf.kernels.size());
  for (const auto& k : elf.kernels) {
    const KernelInfo* p = ptx.find_kernel(k.name);
    ASSERT_NE(p, nullptr) << k.name;
    EXPECT_EQ(p->param_bytes, k.param_bytes) << k.name;
    ASSERT_EQ(p->params.size(), k.params.size()) << k.name;
    for (size_t i = 0; i < k.params.size(); ++i) {
      EXPECT_EQ(p->params[i].offset, k.params[i].offset) << k.name << " " << i;
      EXPECT_EQ(p->params[i].size, k.params[i].size) << k.name << " " << i;
    }
    EXPECT_EQ(p->max_threads, k.max_threads) << k.name;
    EXPECT_EQ(p->registers, -1);  // unknown before ptxas
  }
  ASSERT_EQ(ptx.globals.size(), elf.globals.size());
  for (const auto& g : elf.globals) {
    auto it = std::find_if(ptx.globals.begin(), ptx.globals.end(), [&](const GlobalVar& x) { return x.name == g.name; });
    ASSERT_NE(it, ptx.globals.end()) << g.name;
    EXPECT_EQ(it->size, g.size) << g.name;
    EXPECT_EQ(it->constant, g.constant) << g.name;
    EXPECT_EQ(it->managed, g.managed) << g.name;
  }
}

// Hand-written PTX: comments, .weak entries, directives, no parameters, a vector type.
TEST(Ptx, HandWritten) {
  const std::string text = R"(
// .entry commented_out(
/* .visible .entry also_commented( */
.version 8.5
.target sm_90a
.address_size 64
.extern .global .align 4 .b8 ext_arr[];
.visible .const .align 16 .b8 table[3][16];
.global .f64 gd = 0d3FF0000000000000;
.func helper(.param .b32 x) { ret; }
.weak .entry w(.param .u8 a, .param .align 16 .b8 b[16], .param .v2 .f32 c, .param .u64 .ptr .global .align 8 d)
.reqntid 64, 2
.reqnctapercluster 4
{ .reg .b32 %r<2>; ret; }
.visible .entry   empty ( )
{ ret; }
)";
  EXPECT_EQ(detect_kind(bytes(text)), ImageKind::Ptx);
  const Image img = parse_ptx(bytes(text));
  EXPECT_EQ(img.sm, 90);
  ASSERT_EQ(img.kernels.size(), 2u);
  const KernelInfo* w = img.find_kernel("w");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->params.size(), 4u);
  EXPECT_EQ(w->params[0].offset, 0u);
  EXPECT_EQ(w->params[1].offset, 16u);
  EXPECT_EQ(w->params[1].size, 16u);
  EXPECT_EQ(w->params[2].offset, 32u);
  EXPECT_EQ(w->params[2].size, 8u);
  EXPECT_EQ(w->params[3].offset, 40u);
  EXPECT_EQ(w->param_bytes, 48u);
  EXPECT_EQ(w->max_threads, 128);
  EXPECT_EQ(w->cluster_dims, (std::array<uint32_t, 3>{4, 1, 1}));
  EXPECT_TRUE(img.find_kernel("empty")->params.empty());
  ASSERT_EQ(img.globals.size(), 2u);  // not the .extern one
  EXPECT_EQ(img.globals[0].name, "table");
  EXPECT_EQ(img.globals[0].size, 48u);
  EXPECT_TRUE(img.globals[0].constant);
  EXPECT_EQ(img.globals[1].name, "gd");
  EXPECT_EQ(img.globals[1].size, 8u);
  EXPECT_EQ(kernel_names(bytes(text)), (std::vector<std::string>{"w", "empty"}));
}

TEST(Ptx, MalformedParameterListThrowsInput) {
  for (const std::string text : {".version 9.0\n.entry k(.param", ".version 9.0\n.entry k(.param .u32 a,",
                                 ".version 9.0\n.entry k(.param .align .b8 x[4])", ".version 9.0\n.entry k(junk)",
                                 ".version 9.0\n.entry"}) {
    try {
      parse_ptx(bytes(text));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << text;
    }
  }
}

TEST(Ptx, NotPtx) {
  EXPECT_EQ(detect_kind(bytes("hello world")), ImageKind::Unknown);
  EXPECT_EQ(detect_kind(bytes(std::string("\x01\x02.version", 10))), ImageKind::Unknown);
  EXPECT_EQ(detect_kind({}), ImageKind::Unknown);
}

}  // namespace
}  // namespace kerncap::cubin
