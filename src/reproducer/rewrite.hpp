#pragma once
// The translation unit's original compile command, rewritten to build one cubin for the
// captured GPU from the reproducer's own files:
//   - the source becomes kernel_variant.cu and the output optimized.cubin (-cubin -arch=sm_XX
//     for nvcc; --cuda-device-only --cuda-gpu-arch=sm_XX -c for clang);
//   - every other architecture, phase, dependency-file and relocatable-code flag goes;
//   - include directories inside the source tree point into the mirror (src/...), each
//     followed by the original directory so files the mirror lacks still resolve; the
//     order of the original -I flags is kept;
//   - relative paths are made absolute against the command's directory (the reproducer
//     compiles in its own directory);
//   - -D definitions given to `kerncap extract` are appended (they win over the originals).
// Every flag kerncap does not know is kept as written.
#include <filesystem>
#include <string>
#include <vector>

#include "format/out_layout.hpp"
#include "source/compile_db.hpp"

namespace kerncap::reproducer {

namespace fs = std::filesystem;

struct RewriteInputs {
  fs::path tree;                      // canonical source tree (what is mirrored)
  std::string mirror_dir{format::out::kMirrorDir};     // mirror root, relative to the reproducer directory
  std::string arch = "sm_90";         // the captured GPU's SM (sm_90a for arch-specific images)
  std::vector<std::string> defines;   // "NAME" or "NAME=VALUE" (a leading -D is accepted)
  std::string source{format::out::kKernelVariantCu};
  std::string output{format::out::kOptimizedCubin};
};

struct CompileSpec {
  std::string compiler;            // argv[0] of the real compiler (launchers such as ccache dropped)
  std::vector<std::string> flags;  // rewritten, without the source and the output
  std::vector<std::string> defines;  // "-DNAME" words from extract, after `flags`
  std::vector<std::string> removed;  // what was dropped, as written
  std::vector<std::string> notes;
  std::string arch;
  std::string source, output;
  std::vector<std::string> argv() const;  // compiler, flags, defines, -o output, source
};

// Throws Error(Input) when the command does not run a CUDA compiler kerncap can rewrite.
CompileSpec rewrite_command(const source::CompileCommand& cmd, const RewriteInputs& in);

// "NAME" / "-DNAME" / "NAME=1" -> "-DNAME" / "-DNAME=1"; throws Error(Usage) on an empty name.
std::string define_flag(std::string_view def);

}  // namespace kerncap::reproducer
