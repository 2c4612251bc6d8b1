// kernel_instance.cu: the explicit instantiation spelled from a demangled name, the unit's
// leading preprocessor lines, the cases that fall back to the whole unit (and say why), and
// (when nvcc and make are installed) a real `make recompile` whose cubin holds the captured
// instantiation alone, where the whole unit holds eight kernels.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cubin/cubin.hpp"
#include "reproducer/generator.hpp"
#include "reproducer/instance.hpp"
#include "reproducer/variant.hpp"
#include "reproducer_fixtures.hpp"
#include "source/lexer.hpp"

namespace kerncap::reproducer {
namespace {

constexpr const char* kNvcc = "/usr/local/cuda/bin/nvcc";
// gen::apply<float, 2, (gen::Mode)1>(float*, float const*, int), one of six instantiations.
constexpr const char* kApply = "_ZN3gen5applyIfLi2ELNS_4ModeE1EEEvPT_PKS2_i";

std::string instantiation(const names::KernelName& n) {
  std::string why;
  const std::string line = explicit_instantiation(n, why);
  return line.empty() ? "why: " + why : line;
}

TEST(ExplicitInstantiation, SpelledFromTheDemangledName) {
  EXPECT_EQ(instantiation(names::parse_kernel_name(kApply)),
            "template __global__ void gen::apply<float, 2, (gen::Mode)1>(float*, float const*, int);");
  // llama.cpp's quantised matrix multiplication: an enum value and a bool among the arguments.
  names::KernelName mmq = names::parse_kernel_name(
      "_Z9mul_mat_qIL9ggml_type2ELi128ELb0EEvPKcPKiS4_S4_PfS5_iiiiiiiiiiiiiiiiiii");
  EXPECT_EQ(instantiation(mmq).rfind("template __global__ void mul_mat_q<(ggml_type)2, 128, false>(char const*, int "
                                     "const*, int const*, int const*, float*, float*, int, ",
                                     0),
            0u)
      << instantiation(mmq);
}

TEST(ExplicitInstantiation, WhatCannotBeSpelled) {
  EXPECT_NE(instantiation(names::parse_kernel_name("_Z5plainPi")).find("not a template"), std::string::npos);
  names::KernelName n = names::parse_kernel_name(kApply);
  n.scopes = {names::kAnonymousNamespace};
  EXPECT_NE(instantiation(n).find("anonymous namespace"), std::string::npos);
  n = names::parse_kernel_name(kApply);
  n.template_args = {"main::{lambda(int)#1}"};
  EXPECT_NE(instantiation(n).find("a lambda"), std::string::npos);
  n.template_args = {"(anonymous namespace)::Tag"};
  EXPECT_NE(instantiation(n).find("anonymous namespace"), std::string::npos);
  // A crafted capture cannot smuggle a second declaration, a directive or a comment in.
  for (const char* evil : {"int); int x; void f(int", "int\n#include </etc/passwd>", "int /* x */", "\"s\""}) {
    n.template_args = {evil};
    EXPECT_NE(instantiation(n).find("cannot be spelled"), std::string::npos) << evil;
  }
}

TEST(Prelude, EndsBeforeTheFirstCodeOutsideAnyIf) {
  EXPECT_EQ(prelude_end(source::lex("// c\n#include \"a.h\"\n#define X 1\n\nint x;\n")), 4u);
  EXPECT_EQ(prelude_end(source::lex("#include \"a.h\"\n#ifdef X\n#include \"b.h\"\nint y;\n#endif\n")), 1u);
  EXPECT_EQ(prelude_end(source::lex("#ifndef G\n#define G\n#endif\n#include \"k.cuh\"\nDECL(1);\n")), 4u);
  EXPECT_EQ(prelude_end(source::lex("int x;\n")), 0u);
  EXPECT_EQ(prelude_end(source::lex("#include \"a.h\"\n")), UINT32_MAX);
}

class Instance : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_ = scratch_.root() / "inst";
    fs::copy(testing::fixtures() / "instances", tree_, fs::copy_options::recursive);
    // The original build compiles for two architectures; the reproducer keeps the captured one.
    const nlohmann::json db = nlohmann::json::array(
        {{{"directory", (tree_ / "build").string()},
          {"arguments", {kNvcc, "-I" + (tree_ / "include").string(), "-O2", "-gencode", "arch=compute_80,code=sm_80",
                         "-gencode", "arch=compute_90,code=sm_90", "-c", (tree_ / "src/many.cu").string(), "-o",
                         "many.o"}},
          {"file", (tree_ / "src/many.cu").string()}}});
    testing::spit(tree_ / "build/compile_commands.json", db.dump(1));
    out_ = scratch_.root() / "out";
  }
  Generated generate(const std::string& mangled) {
    source::Request q;
    q.mangled = mangled;
    q.source_dir = tree_;
    q.compile_commands = tree_ / "build/compile_commands.json";
    const source::Result f = source::find_source(q);
    EXPECT_EQ(f.status, source::Status::Found) << f.summary << "\n" << f.detail;
    testing::write_fake_capture(out_, mangled, f.name.demangled);
    return generate_reproducer({out_, f, {}, "/opt/kerncap/bin/kerncap"});
  }
  static bool tools() { return fs::exists(kNvcc) && std::system("make --version >/dev/null 2>&1") == 0; }
  int make(const std::string& args) {
    return std::system(("make -s -C " + out_.string() + " " + args + " >" + (out_ / "make.log").string() + " 2>&1").c_str());
  }
  std::vector<std::string> kernels() {
    const auto bytes = format::read_file(out_ / kVariantCubin);
    const cubin::Image img = cubin::parse_image(bytes);
    EXPECT_EQ(img.sm, 90);
    std::vector<std::string> names;
    for (const auto& k : img.kernels) names.push_back(k.name);
    return names;
  }
  testing::Scratch scratch_;
  fs::path tree_, out_;
};

TEST_F(Instance, TheCapturedInstantiationAlone) {
  const Generated g = generate(kApply);
  ASSERT_TRUE(g.recompile_available) << g.unavailable_reason;
  EXPECT_EQ(g.unit, "kernel_instance.cu");
  EXPECT_TRUE(g.whole_unit_reason.empty());
  const std::string inst = testing::slurp(out_ / "kernel_instance.cu");
  EXPECT_NE(inst.find("#define GEN_BLOCK 128\n#include \"src/include/gen/kern.cuh\"\n"), std::string::npos) << inst;
  EXPECT_NE(inst.find("\ntemplate __global__ void gen::apply<float, 2, (gen::Mode)1>(float*, float const*, int);\n"),
            std::string::npos)
      << inst;
  EXPECT_EQ(inst.find("struct Local"), std::string::npos);  // nothing after the leading lines
  const std::string mk = testing::slurp(out_ / "Makefile");
  for (const char* s : {"INSTANCE_UNIT := kernel_instance.cu", "-arch=sm_90", "WHOLE_UNIT ?="})
    EXPECT_NE(mk.find(s), std::string::npos) << s;
  EXPECT_EQ(mk.find("compute_80"), std::string::npos);  // the captured architecture only
  const auto j = nlohmann::json::parse(testing::slurp(out_ / "compile.json"));
  EXPECT_EQ(j["recompile"]["unit"], "kernel_instance.cu");
  EXPECT_EQ(j["recompile"]["arguments"].back(), "kernel_instance.cu");
  EXPECT_NE(testing::slurp(out_ / "README.md").find("kernel_instance.cu"), std::string::npos);

  if (!tools()) GTEST_SKIP() << "nvcc or make not installed";
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  EXPECT_NE(testing::slurp(out_ / "make.log").find("compiling kernel_instance.cu, only"), std::string::npos);
  EXPECT_EQ(kernels(), std::vector<std::string>{kApply});
  EXPECT_TRUE(fresh_variant(out_).cubin);
  EXPECT_NE(fresh_variant(out_).note.find("kernel_instance.cu"), std::string::npos);
  // Unchanged sources: nothing is recompiled.
  const auto built = fs::last_write_time(out_ / kVariantCubin);
  ASSERT_EQ(make("recompile"), 0);
  EXPECT_EQ(fs::last_write_time(out_ / kVariantCubin), built);
  // The whole unit on request: every kernel of the unit, the captured one among them.
  ASSERT_EQ(make("-B recompile WHOLE_UNIT=1"), 0) << testing::slurp(out_ / "make.log");
  const auto all = kernels();
  EXPECT_EQ(all.size(), 10u);
  EXPECT_NE(std::find(all.begin(), all.end(), kApply), all.end());
}

TEST_F(Instance, AnEditToTheHeaderIsCompiledAndABrokenOneSaysWhatToTry) {
  if (!tools()) GTEST_SKIP() << "nvcc or make not installed";
  generate(kApply);
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  const fs::path header = out_ / "src/include/gen/kern.cuh";
  const std::string text = testing::slurp(header);
  testing::spit(header, testing::replace_all(text, "in[i] * static_cast<T>(N)", "in[i] * static_cast<T>(N + 1)"));
  fs::last_write_time(header, fs::last_write_time(out_ / kVariantCubin) + std::chrono::seconds(2));
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  EXPECT_EQ(kernels(), std::vector<std::string>{kApply});
  testing::spit(header, text + "\nnot C++\n");
  // The kernel stamps files from a coarse clock (a few ms): written right after the build,
  // the header could carry the cubin's very time, and make would see nothing to do.
  fs::last_write_time(header, fs::last_write_time(out_ / kVariantCubin) + std::chrono::seconds(2));
  EXPECT_NE(make("recompile"), 0);
  EXPECT_NE(testing::slurp(out_ / "make.log").find("make -B recompile WHOLE_UNIT=1"), std::string::npos);
}

// A kernel template defined in the unit itself: kernel_variant.cu gets a guard after its
// definition, kernel_instance.cu includes it up to there and instantiates the captured one.
TEST_F(Instance, AKernelDefinedInTheUnitIsCompiledUpToItsDefinition) {
  constexpr const char* kFill3 = "_ZN6own_ns6fill_nILi3EEEvPi";  // own_ns::fill_n<3>(int*), in a namespace
  const Generated g = generate(kFill3);
  ASSERT_TRUE(g.recompile_available) << g.unavailable_reason;
  EXPECT_EQ(g.unit, "kernel_instance.cu") << g.whole_unit_reason;
  const std::string variant = testing::slurp(out_ / "kernel_variant.cu");
  const size_t guard = variant.find("#ifndef KERNCAP_INSTANCE_ONLY");
  ASSERT_NE(guard, std::string::npos) << variant;
  EXPECT_LT(variant.find("p[0] = N;\n}\n"), guard);    // right after the kernel's closing brace
  EXPECT_LT(guard, variant.find("void run("));          // before the host code
  EXPECT_NE(variant.find("#else  // kerncap: closes the namespaces"), std::string::npos);  // own_ns is open there
  const std::string inst = testing::slurp(out_ / "kernel_instance.cu");
  EXPECT_NE(inst.find("#define KERNCAP_INSTANCE_ONLY 1\n#include \"kernel_variant.cu\""), std::string::npos) << inst;
  EXPECT_NE(inst.find("template __global__ void own_ns::fill_n<3>(int*);"), std::string::npos) << inst;
  const auto j = nlohmann::json::parse(testing::slurp(out_ / "compile.json"));
  EXPECT_EQ(j["recompile"]["instance"]["includes_unit"], true);
  EXPECT_EQ(j["recompile"]["instance"]["prelude_lines"], 18);  // fill_n's closing brace

  if (!tools()) GTEST_SKIP() << "nvcc or make not installed";
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  // What precedes the kernel in the unit is compiled too (a non-template kernel), and none of
  // the instantiations the host code after it asks for.
  auto built = kernels();
  std::sort(built.begin(), built.end());
  EXPECT_EQ(built, (std::vector<std::string>{"_Z5plainPi", kFill3}));
  // An edit to the kernel in kernel_variant.cu reaches the instance; a broken one says what to try.
  const std::string edited = testing::replace_all(variant, "p[0] = N;", "p[0] = N + 1;");
  ASSERT_NE(edited, variant);
  testing::spit(out_ / "kernel_variant.cu", edited);
  fs::last_write_time(out_ / "kernel_variant.cu", fs::last_write_time(out_ / kVariantCubin) + std::chrono::seconds(2));
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  testing::spit(out_ / "kernel_variant.cu", testing::replace_all(variant, "p[0] = N;", "p[0] = N +;"));
  fs::last_write_time(out_ / "kernel_variant.cu", fs::last_write_time(out_ / kVariantCubin) + std::chrono::seconds(2));
  EXPECT_NE(make("recompile"), 0);
  EXPECT_NE(testing::slurp(out_ / "make.log").find("make -B recompile WHOLE_UNIT=1"), std::string::npos);
  // The whole unit still compiles, guard and all.
  testing::spit(out_ / "kernel_variant.cu", variant);
  ASSERT_EQ(make("-B recompile WHOLE_UNIT=1"), 0) << testing::slurp(out_ / "make.log");
  EXPECT_EQ(kernels().size(), 10u);
}

// A kernel that is not a template, defined in the unit: its definition is what compiles.
TEST_F(Instance, APlainKernelDefinedInTheUnitIsCompiledWithoutTheRest) {
  const Generated g = generate("_Z5plainPi");
  ASSERT_TRUE(g.recompile_available) << g.unavailable_reason;
  EXPECT_EQ(g.unit, "kernel_instance.cu") << g.whole_unit_reason;
  const std::string inst = testing::slurp(out_ / "kernel_instance.cu");
  EXPECT_NE(inst.find("not a template"), std::string::npos) << inst;
  EXPECT_EQ(inst.find("template __global__"), std::string::npos) << inst;
  EXPECT_NE(testing::slurp(out_ / "README.md").find("up to the captured kernel's definition"), std::string::npos);
  if (!tools()) GTEST_SKIP() << "nvcc or make not installed";
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  EXPECT_EQ(kernels(), std::vector<std::string>{"_Z5plainPi"});
}

TEST(DefinedAfterUse, AHelperDeclaredBeforeTheKernelAndDefinedAfterIt) {
  const std::string unit =
      "namespace n {\n"
      "__device__ float helper(float);\n"
      "__global__ void k(float* p) { if (p) { p[0] = helper(1.f); } }\n"
      "__device__ float helper(float x) { return x; }\n"   // line 4: after the cut
      "}\n"
      "void host(float* p) { if (p) { k<<<1, 1>>>(p); } for (int i = 0; i < 2; ++i) { } }\n";
  const auto toks = source::lex(unit);
  size_t cut = 0;
  while (toks[cut].line < 4) ++cut;
  EXPECT_EQ(defined_after_use(toks, cut), std::vector<std::string>{"helper"});
  // Statements inside bodies after the cut (if, for) are not definitions; a helper defined
  // before the kernel is fine.
  const auto fine = source::lex(
      "__device__ float helper(float x) { return x; }\n"
      "__global__ void k(float* p) { if (p) { p[0] = helper(1.f); } }\n"
      "void host(float* p) { if (p) { k<<<1, 1>>>(p); } while (p) { } }\n");
  cut = 0;
  while (fine[cut].line < 3) ++cut;
  EXPECT_TRUE(defined_after_use(fine, cut).empty());
}

TEST(GuardEndLine, AnIncludeGuardAroundTheUnitClosesAtItsEnd) {
  auto cut_at = [](const std::vector<source::Token>& toks, uint32_t line) {
    size_t i = 0;
    while (i < toks.size() && toks[i].line < line) ++i;
    return i;
  };
  // cuda-samples' reduction_kernel.cu: the whole unit inside #ifndef _REDUCE_KERNEL_H_.
  const auto guarded = source::lex(
      "#ifndef U_H\n#define U_H\n__global__ void k(int* p) { *p = 1; }\n"  // the kernel ends on line 3
      "#if X\nint y;\n#endif\nvoid host() {}\n#endif  // U_H\n");
  EXPECT_EQ(guard_end_line(guarded, cut_at(guarded, 4), 1), 8u);
  EXPECT_EQ(guard_end_line(guarded, cut_at(guarded, 4), 0), 0u);  // nothing open: the unit's end
  // The block closes before the end, or has an #else after the kernel: no cut.
  const auto early = source::lex("#if A\n__global__ void k(int* p) { }\n#endif\nvoid host() {}\n");
  EXPECT_EQ(guard_end_line(early, cut_at(early, 3), 1), UINT32_MAX);
  const auto with_else = source::lex("#if A\n__global__ void k(int* p) { }\n#else\nint z;\n#endif\n");
  EXPECT_EQ(guard_end_line(with_else, cut_at(with_else, 3), 1), UINT32_MAX);
}

TEST(DefinitionEnd, TheBodysClosingBraceAndTheBlocksAroundIt) {
  const auto toks = source::lex(
      "namespace a { namespace b {\n"
      "template <class T> __global__ void k(T*);\n"       // a declaration: not this
      "void h() { k<int><<<1, 1>>>(nullptr); }\n"        // a use: not this
      "template <class T>\n"
      "__global__ void k(T* p) {\n"
      "  if (p) { p[0] = T(); }\n"
      "}  // end of k\n"
      "}}\n");
  const DefinitionEnd e = definition_end(toks, "k", 1);
  EXPECT_EQ(e.line, 7u);
  EXPECT_EQ(e.open_blocks, 2);
  EXPECT_FALSE(e.code_after_on_line);
  EXPECT_EQ(definition_end(toks, "k", 8).line, 0u);  // none at or after line 8
  EXPECT_TRUE(definition_end(source::lex("template <int N> __global__ void k(int* p) { } int x;\n"), "k", 1)
                  .code_after_on_line);
}

TEST_F(Instance, FallsBackToTheWholeUnitAndSaysWhy) {
  struct Case {
    const char* mangled;
    const char* why;
  };
  for (const Case& c : {Case{"_ZN3gen4fillI5LocalEEvPT_i", "names Local, which many.cu declares after its leading"}}) {
    fs::remove_all(out_);
    const Generated g = generate(c.mangled);
    ASSERT_TRUE(g.recompile_available) << c.mangled;
    EXPECT_EQ(g.unit, "kernel_variant.cu") << c.mangled;
    EXPECT_NE(g.whole_unit_reason.find(c.why), std::string::npos) << g.whole_unit_reason;
    EXPECT_FALSE(fs::exists(out_ / "kernel_instance.cu"));
    const std::string mk = testing::slurp(out_ / "Makefile");
    EXPECT_NE(mk.find("INSTANCE_UNIT := \n"), std::string::npos);
    EXPECT_NE(mk.find("the whole unit: " + g.whole_unit_reason.substr(0, 20)), std::string::npos) << mk;
    const auto j = nlohmann::json::parse(testing::slurp(out_ / "compile.json"));
    EXPECT_EQ(j["recompile"]["unit"], "kernel_variant.cu");
    EXPECT_EQ(j["recompile"]["whole_unit_reason"], g.whole_unit_reason);
    const bool noted = std::any_of(g.notes.begin(), g.notes.end(),
                                   [&](const std::string& n) { return n.find(g.whole_unit_reason) != std::string::npos; });
    EXPECT_TRUE(noted);
  }
  if (!tools()) GTEST_SKIP() << "nvcc or make not installed";
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  EXPECT_NE(testing::slurp(out_ / "make.log").find("compiling kernel_variant.cu, the whole unit: its template argument"),
            std::string::npos);
  EXPECT_EQ(kernels().size(), 10u);
}

}  // namespace
}  // namespace kerncap::reproducer
