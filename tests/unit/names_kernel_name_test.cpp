// Taking kernel names apart: scopes, base name, template arguments, parameters.
#include <gtest/gtest.h>

#include "names/kernel_name.hpp"

namespace kerncap::names {
namespace {

TEST(NamesKernelName, TemplateInNamespace) {
  const KernelName k = parse_kernel_name("_ZN2mf12scale_kernelIfLi4EEEvPT_PKS1_ii");
  EXPECT_TRUE(k.cxx);
  EXPECT_EQ(k.demangled, "void mf::scale_kernel<float, 4>(float*, float const*, int, int)");
  EXPECT_EQ(k.scopes, std::vector<std::string>{"mf"});
  EXPECT_EQ(k.base, "scale_kernel");
  EXPECT_TRUE(k.is_template);
  EXPECT_EQ(k.template_args, (std::vector<std::string>{"float", "4"}));
  EXPECT_EQ(k.params, (std::vector<std::string>{"float*", "float const*", "int", "int"}));
  EXPECT_EQ(k.qualified(), "mf::scale_kernel");
}

TEST(NamesKernelName, PlainStaticAndVoidParameters) {
  const KernelName k = parse_kernel_name("_Z2skPf");
  EXPECT_EQ(k.base, "sk");
  EXPECT_TRUE(k.scopes.empty());
  EXPECT_FALSE(k.is_template);
  EXPECT_EQ(k.params, std::vector<std::string>{"float*"});
  EXPECT_TRUE(parse_kernel_name("_Z4initv").params.empty());
}

TEST(NamesKernelName, AnonymousNamespaceKeepsNvccFileTag) {
  // nvcc names anonymous namespaces after the compiled file: here "a.cu".
  const KernelName k = parse_kernel_name("_ZN30_GLOBAL__N__e00141c6_4_a_cu_ck2akEPf");
  EXPECT_EQ(k.scopes, std::vector<std::string>{kAnonymousNamespace});
  EXPECT_EQ(k.base, "ak");
  EXPECT_EQ(k.anon_file_hint, "a_cu");
  EXPECT_EQ(file_hint_of("a.cu"), "a_cu");
  EXPECT_EQ(file_hint_of("conv-1d.cu"), "conv_1d_cu");
}

TEST(NamesKernelName, NestedAnonymousAndTemplateArgumentsWithParentheses) {
  const KernelName k = parse_kernel_name("", "void outer::(anonymous namespace)::k<(int)4, std::pair<int, int> >(int (*)(int), int)");
  EXPECT_EQ(k.scopes, (std::vector<std::string>{"outer", kAnonymousNamespace}));
  EXPECT_EQ(k.base, "k");
  EXPECT_EQ(k.template_args, (std::vector<std::string>{"(int)4", "std::pair<int, int>"}));
  EXPECT_EQ(k.params, (std::vector<std::string>{"int (*)(int)", "int"}));
}

TEST(NamesKernelName, ExternCAndTritonNamesAreNotCxx) {
  const KernelName c = parse_kernel_name("mf_bias");
  EXPECT_FALSE(c.cxx);
  EXPECT_EQ(c.base, "mf_bias");
  EXPECT_TRUE(c.params.empty());
  EXPECT_FALSE(parse_kernel_name("triton_poi_fused_add_0").cxx);
}

TEST(NamesKernelName, SplitTopLevel) {
  EXPECT_EQ(split_top_level("a, b<c, d>, e(f, g)"), (std::vector<std::string>{"a", "b<c, d>", "e(f, g)"}));
  EXPECT_TRUE(split_top_level("").empty());
  EXPECT_EQ(split_top_level("x"), std::vector<std::string>{"x"});
}

}  // namespace
}  // namespace kerncap::names
