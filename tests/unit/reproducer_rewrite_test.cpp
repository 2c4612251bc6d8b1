// Rewriting a translation unit's compile command into the reproducer's cubin build.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.hpp"
#include "reproducer/rewrite.hpp"
#include "source/args.hpp"

namespace kerncap::reproducer {
namespace {

bool has(const std::vector<std::string>& v, const std::string& w) { return std::find(v.begin(), v.end(), w) != v.end(); }

source::CompileCommand cmake_nvcc() {
  source::CompileCommand c;
  c.directory = "/proj/build";
  c.file = "/proj/app/main.cu";
  c.argv = source::shell_split(
      "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DMF_FAST_PATH -I/proj/include -I../config "
      "-isystem /opt/ext/include -O2 -g \"--generate-code=arch=compute_90,code=[compute_90,sm_90]\" "
      "-Xcompiler=-fPIE -std=c++17 -MD -MT app/main.cu.o -MF app/main.cu.o.d -x cu -c /proj/app/main.cu "
      "-o app/main.cu.o");
  return c;
}

TEST(ReproducerRewrite, CmakeNvccCommand) {
  const CompileSpec s = rewrite_command(cmake_nvcc(), {"/proj", "src", "sm_90", {"EXTRA=2"}});
  EXPECT_EQ(s.compiler, "/usr/local/cuda/bin/nvcc");
  // Kept as written, in order.
  for (const char* w : {"-forward-unknown-to-host-compiler", "-DMF_FAST_PATH", "-O2", "-g", "-Xcompiler=-fPIE",
                        "-std=c++17", "-x", "cu"})
    EXPECT_TRUE(has(s.flags, w)) << w;
  // Tree include directories: the mirror first, then the original (absolute), in the original order.
  const auto at = [&](const std::string& w) { return std::find(s.flags.begin(), s.flags.end(), w) - s.flags.begin(); };
  EXPECT_LT(at("-Isrc/include"), at("-I/proj/include"));
  EXPECT_LT(at("-I/proj/include"), at("-Isrc/config"));
  EXPECT_LT(at("-Isrc/config"), at("-I/proj/config"));  // "../config" against /proj/build
  EXPECT_TRUE(has(s.flags, "/opt/ext/include"));         // outside the tree: untouched
  // Dropped: architectures, phases, dependency files, output, the source.
  for (const char* w : {"-c", "-MD", "-MT", "-MF", "/proj/app/main.cu", "-o", "app/main.cu.o",
                        "--generate-code=arch=compute_90,code=[compute_90,sm_90]"})
    EXPECT_FALSE(has(s.flags, w)) << w;
  EXPECT_TRUE(has(s.flags, "-cubin"));
  EXPECT_TRUE(has(s.flags, "-arch=sm_90"));
  EXPECT_EQ(s.defines, std::vector<std::string>{"-DEXTRA=2"});
  const auto argv = s.argv();
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[argv.size() - 3], "-o");
  EXPECT_EQ(argv[argv.size() - 2], "optimized.cubin");
  EXPECT_EQ(argv.back(), "kernel_variant.cu");
  EXPECT_EQ(argv[argv.size() - 4], "-DEXTRA=2");  // after the original flags: it wins
}

TEST(ReproducerRewrite, LauncherRelativePathsRdcAndOldArch) {
  source::CompileCommand c;
  c.directory = "/proj/build";
  c.file = "/proj/src/k.cu";
  c.argv = {"ccache", "nvcc", "-I", "../src", "-gencode", "arch=compute_80,code=sm_80", "-arch", "sm_80",
            "-rdc=true", "-dc", "../src/k.cu", "-o", "k.o", "-include", "../src/pre.h", "-ccbin", "tools/g++"};
  const CompileSpec s = rewrite_command(c, {"/proj", "src", "sm_90a", {}});
  EXPECT_EQ(s.compiler, "nvcc");
  EXPECT_TRUE(has(s.removed, "ccache"));
  EXPECT_TRUE(has(s.flags, "src/src"));  // "-I ../src" -> the mirror of /proj/src, separate form kept
  EXPECT_TRUE(has(s.flags, "/proj/src"));
  EXPECT_FALSE(has(s.flags, "-gencode"));
  EXPECT_FALSE(has(s.flags, "sm_80"));
  EXPECT_FALSE(has(s.flags, "-rdc=true"));
  EXPECT_FALSE(has(s.flags, "-dc"));
  EXPECT_TRUE(has(s.flags, "src/src/pre.h"));      // forced include from the mirror only
  EXPECT_FALSE(has(s.flags, "/proj/src/pre.h"));
  EXPECT_TRUE(has(s.flags, "/proj/build/tools/g++"));
  EXPECT_TRUE(has(s.flags, "-arch=sm_90a"));
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes[0].find("relocatable device code"), std::string::npos);
}

TEST(ReproducerRewrite, ClangCuda) {
  source::CompileCommand c;
  c.directory = "/proj";
  c.file = "/proj/k.cu";
  c.argv = {"/usr/bin/clang++", "-x", "cuda", "--cuda-gpu-arch=sm_80", "-O3", "-c", "k.cu", "-o", "k.o"};
  const CompileSpec s = rewrite_command(c, {"/proj", "src", "sm_90", {}});
  EXPECT_TRUE(has(s.flags, "--cuda-device-only"));
  EXPECT_TRUE(has(s.flags, "--cuda-gpu-arch=sm_90"));
  EXPECT_FALSE(has(s.flags, "--cuda-gpu-arch=sm_80"));
  EXPECT_TRUE(has(s.flags, "-O3"));
}

TEST(ReproducerRewrite, RefusesNonCudaCompilersAndBadDefines) {
  source::CompileCommand c;
  c.directory = "/p";
  c.file = "/p/a.cpp";
  c.argv = {"/usr/bin/g++", "-c", "a.cpp"};
  EXPECT_THROW(rewrite_command(c, {"/p", "src", "sm_90", {}}), Error);
  EXPECT_EQ(define_flag("-DX=1"), "-DX=1");
  EXPECT_EQ(define_flag("Y"), "-DY");
  EXPECT_THROW(define_flag("=3"), Error);
  EXPECT_THROW(define_flag(""), Error);
}

}  // namespace
}  // namespace kerncap::reproducer
