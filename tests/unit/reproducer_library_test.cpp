// Kernels defined in a library header outside the source tree (Thrust, CUB): the finder looks
// in the include directories of the build and of its nvcc, the reproducer recompiles the unit
// that instantiates the kernel, with an editable copy of the header found first (-Ilibrary).
// The end-to-end test compiles a real Thrust unit with the toolkit's nvcc (skipped without it).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cubin/cubin.hpp"
#include "names/demangle.hpp"
#include "reproducer/generator.hpp"
#include "reproducer/variant.hpp"
#include "reproducer_fixtures.hpp"
#include "source/library_headers.hpp"

namespace kerncap::reproducer {
namespace {

constexpr const char* kNvcc = "/usr/local/cuda/bin/nvcc";
using source::library_scopes_match;

TEST(LibraryScopes, VersionedAndMacroOpenedNamespacesAreSkipped) {
  // thrust::THRUST_300001_SM_900_NS::cuda_cub::core::detail, written inside THRUST_NAMESPACE_BEGIN
  EXPECT_TRUE(library_scopes_match({"thrust", "THRUST_300001_SM_900_NS", "cuda_cub", "core", "detail"},
                                   {"cuda_cub", "core", "detail"}));
  EXPECT_TRUE(library_scopes_match({"cub", "CUB_300001_SM_900_NS", "detail", "reduce"}, {"detail", "reduce"}));
  EXPECT_TRUE(library_scopes_match({"cub", "CUB_300001_SM_900_NS", "detail", "reduce"}, {"cub", "detail", "reduce"}));
  EXPECT_TRUE(library_scopes_match({"cuda", "std", "__4", "detail"}, {"detail"}));
  // CUB's own versioned namespace has no _NS suffix (DeviceRadixSortOnesweepKernel, CUDA 13).
  EXPECT_TRUE(library_scopes_match({"cub", "CUB_300001_SM_900", "detail", "radix_sort"}, {"detail", "radix_sort"}));
  EXPECT_FALSE(library_scopes_match({"cub", "CUB_INTERNAL", "detail"}, {"detail"}));
  // Another namespace before the tail, a different tail, or a longer definition: not it.
  EXPECT_FALSE(library_scopes_match({"mylib", "detail", "reduce"}, {"detail", "reduce"}));
  EXPECT_FALSE(library_scopes_match({"cub", "CUB_300001_SM_900_NS", "detail", "scan"}, {"detail", "reduce"}));
  EXPECT_FALSE(library_scopes_match({"cub", "detail"}, {"cub", "detail", "reduce"}));
}

TEST(LibraryIncludeDirs, TheBuildsDirectoriesOutsideTheTreeThenTheToolkits) {
  testing::Scratch s;
  const fs::path tree = s.root() / "app", outside = s.root() / "cccl", tk = s.root() / "cuda";
  for (const auto& d : {tree / "inc", outside, tk / "bin", tk / "include" / "cccl"}) fs::create_directories(d);
  testing::spit(tk / "bin" / "nvcc", "#!/bin/sh\n");
  source::CompileDb db;
  db.entries.push_back({tree, tree / "a.cu",
                        {(tk / "bin" / "nvcc").string(), "-I" + (tree / "inc").string(), "-I" + outside.string(),
                         "-c", "a.cu"},
                        std::nullopt});
  const auto dirs = source::library_include_dirs(db, fs::canonical(tree));
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], fs::canonical(outside));  // in the tree: not a library
  EXPECT_EQ(dirs[1], fs::canonical(tk / "include" / "cccl"));
  EXPECT_EQ(dirs[2], fs::canonical(tk / "include"));
}

// A CUTLASS-style kernel (cutlass::Kernel2<Op>, written with a macro for __global__) defined in
// a checkout the build names with -I: found there, and the unit that includes it is the one
// recompiled; a kernel nowhere at all stays not-in-tree and says the libraries were searched.
TEST(LibraryKernelFromACheckout, IsFoundThroughTheBuildsIncludeDirectory) {
  testing::Scratch s;
  const fs::path app = s.root() / "app", lib = s.root() / "cutlass" / "include";
  fs::create_directories(app);
  fs::create_directories(lib / "cutlass");
  testing::spit(lib / "cutlass" / "device_kernel.h",
                "#pragma once\n#define CUTLASS_GLOBAL __global__\nnamespace cutlass {\n"
                "template <typename Operator>\nCUTLASS_GLOBAL void Kernel2(typename Operator::Params params) {\n"
                "  Operator op;\n  op(params);\n}\n}  // namespace cutlass\n");
  testing::spit(app / "gemm.cu", "#include <cutlass/device_kernel.h>\nnamespace demo { struct Op { struct Params {}; "
                                 "__device__ void operator()(Params) {} }; }\n"
                                 "void run() { cutlass::Kernel2<demo::Op><<<1, 1>>>({}); }\n");
  testing::spit(app / "host.cpp", "int main() { return 0; }\n");
  nlohmann::json db = nlohmann::json::array(
      {{{"directory", app.string()},
        {"arguments", {kNvcc, "-I" + lib.string(), "-arch=sm_90", "-c", "gemm.cu", "-o", "gemm.o"}},
        {"file", (app / "gemm.cu").string()}},
       {{"directory", app.string()},
        {"arguments", {"/usr/bin/g++", "-c", "host.cpp", "-o", "host.o"}},
        {"file", (app / "host.cpp").string()}}});
  testing::spit(app / "compile_commands.json", db.dump());
  source::Request q;
  q.mangled = "_ZN7cutlass7Kernel2IN4demo2OpEEEvNT_6ParamsE";  // void cutlass::Kernel2<demo::Op>(demo::Op::Params)
  q.source_dir = app;
  q.compile_commands = app / "compile_commands.json";
  q.language = source::Language::Cuda;
  const source::Result f = source::find_source(q);
  ASSERT_EQ(f.status, source::Status::Found) << f.summary << "\n" << f.detail;
  EXPECT_EQ(f.definition, fs::canonical(lib / "cutlass" / "device_kernel.h"));
  EXPECT_EQ(f.line, 5u);
  EXPECT_EQ(f.library_root, fs::canonical(lib));
  EXPECT_EQ(f.tu, fs::canonical(app / "gemm.cu"));  // the CUDA unit, not the host one

  q.mangled = "_ZN7cutlass7Kernel3IN4demo2OpEEEvNT_6ParamsE";  // defined nowhere
  const source::Result none = source::find_source(q);
  EXPECT_EQ(none.status, source::Status::NotInTree);
  EXPECT_TRUE(none.library_root.empty());
  bool said = false;
  for (const auto& n : none.notes) said = said || n.find("not in the library headers either") != std::string::npos;
  EXPECT_TRUE(said);
}

// A unit that calls thrust::reduce_by_key: its kernel, _kernel_agent<ReduceByKeyAgent<...>, ...>,
// is defined in thrust/system/cuda/detail/core/agent_launcher.h.
class LibraryKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kNvcc) || std::system("make --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "nvcc or make missing";
    app_ = scratch_.root() / "app";
    out_ = scratch_.root() / "out";
    fs::create_directories(app_);
    testing::spit(app_ / "main.cu",
                  "#include <thrust/execution_policy.h>\n#include <thrust/reduce.h>\n"
                  "void segreduce(int* k, int* v, int* ko, int* vo, int n) {\n"
                  "  thrust::reduce_by_key(thrust::device, k, k + n, v, ko, vo);\n}\n"
                  "int main() { return 0; }\n");
    nlohmann::json db = nlohmann::json::array(
        {{{"directory", app_.string()},
          {"arguments", {kNvcc, "-std=c++17", "-O3", "-arch=sm_90", "-c", "main.cu", "-o", "main.o"}},
          {"file", (app_ / "main.cu").string()}}});
    testing::spit(app_ / "compile_commands.json", db.dump());
    const std::string cmd = std::string(kNvcc) + " -std=c++17 -arch=sm_90 -cubin -o " + (scratch_.root() / "app.cubin").string() +
                            " " + (app_ / "main.cu").string() + " >" + (scratch_.root() / "nvcc.log").string() + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << testing::slurp(scratch_.root() / "nvcc.log");
    for (const auto& k : cubin::parse_image(format::read_file(scratch_.root() / "app.cubin")).kernels)
      if (k.name.find("_kernel_agent") != std::string::npos && k.name.find("ReduceByKeyAgent") != std::string::npos)
        mangled_ = k.name;
    ASSERT_FALSE(mangled_.empty()) << "no reduce-by-key agent kernel in the compiled unit";
  }
  int make(const std::string& target) {
    return std::system(("make -s -C " + out_.string() + " " + target + " >" + (out_ / "make.log").string() + " 2>&1").c_str());
  }
  testing::Scratch scratch_;
  fs::path app_, out_;
  std::string mangled_;
};

TEST_F(LibraryKernel, IsFoundInTheToolkitsHeadersAndRecompiledFromTheUnitWithAnEditableCopy) {
  source::Request q;
  q.mangled = mangled_;
  q.source_dir = app_;
  q.compile_commands = app_ / "compile_commands.json";
  const source::Result f = source::find_source(q);
  ASSERT_EQ(f.status, source::Status::Found) << f.summary << "\n" << f.detail;
  EXPECT_TRUE(f.definition.generic_string().ends_with("thrust/system/cuda/detail/core/agent_launcher.h"))
      << f.definition;
  EXPECT_EQ(f.library_root.filename(), "cccl");
  EXPECT_EQ(f.tu, fs::canonical(app_ / "main.cu"));

  testing::write_fake_capture(out_, mangled_, names::demangle(mangled_));
  const Generated g = generate_reproducer({out_, f, {}, "/opt/kerncap/bin/kerncap"});
  ASSERT_TRUE(g.recompile_available) << g.unavailable_reason;
  EXPECT_EQ(g.unit, "kernel_variant.cu");
  EXPECT_NE(g.whole_unit_reason.find("library header"), std::string::npos) << g.whole_unit_reason;
  const std::string copy = "library/thrust/system/cuda/detail/core/agent_launcher.h";
  EXPECT_EQ(g.mirror->edit_file, copy);
  ASSERT_TRUE(fs::exists(out_ / copy));
  EXPECT_EQ(testing::slurp(out_ / copy), testing::slurp(f.definition));
  EXPECT_NE(testing::slurp(out_ / "Makefile").find("-Ilibrary"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(testing::slurp(out_ / "compile.json"))["edit"]["file"], copy);

  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  EXPECT_NE(cubin::parse_image(format::read_file(out_ / "optimized.cubin")).find_kernel(mangled_), nullptr);
  // The copy is what compiles: a broken edit in it breaks the recompile.
  std::string text = testing::slurp(out_ / copy);
  text.insert(text.find('\n', text.find("Agent::entry(args..., shmem);")) + 1, "#error kerncap_library_copy\n");
  testing::spit(out_ / copy, text);
  // Past the cubin's time stamp (the file system's clock is coarse): make and validate see the edit.
  fs::last_write_time(out_ / copy, fs::last_write_time(out_ / "optimized.cubin") + std::chrono::seconds(2));
  EXPECT_FALSE(fresh_variant(out_).cubin);
  EXPECT_NE(fresh_variant(out_).note.find("library/"), std::string::npos) << fresh_variant(out_).note;
  EXPECT_NE(make("recompile"), 0);
  EXPECT_NE(testing::slurp(out_ / "make.log").find("kerncap_library_copy"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::reproducer
