#pragma once
// The C++ source finder: from a captured kernel's name to the definition, the translation
// unit that compiled it, that unit's exact compile command and its local includes, or a
// classified reason why there is no source to recompile (never a generic warning).
//
//   name -> parse (names/kernel_name) -> library/Triton classification (names/classify)
//        -> definitions named like it in --source-dir (tree_search, definitions)
//        -> translation units that contain each (compile_commands.json + include tracing)
//        -> one candidate, decided by object-file symbols, the captured image's other
//           kernels, nvcc's anonymous-namespace file tag, and the file kind; `how` says which.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "names/classify.hpp"
#include "names/kernel_name.hpp"
#include "source/compile_db.hpp"
#include "source/includes.hpp"

namespace kerncap::source {

namespace fs = std::filesystem;

enum class Status {
  Found,             // definition, translation unit and compile command: recompile works
  NoCompileCommand,  // definition and translation unit, but no compile command for it
  NoSourceDir,       // neither --source-dir nor --compile-commands given
  NotInTree,         // the kernel is in the image, but not defined under the source dir
  LibraryKernel,     // precompiled in a library binary (cuBLAS, cuDNN, CUTLASS kernels, NCCL, ATen...)
  RuntimeGenerated,  // compiled at run time (NVRTC, PTX JIT)
  Triton,            // a Triton kernel: the Triton path, not the C++ finder
  Ambiguous,         // several definitions fit and nothing told them apart
};
std::string_view to_string(Status s);  // "found", "no-compile-command", "not-in-tree", ...

enum class Language { Auto, Cuda, Triton };

struct Request {
  std::string mangled;
  std::string demangled;                      // computed when empty
  std::optional<fs::path> source_dir;
  std::optional<fs::path> compile_commands;
  std::vector<std::string> image_kernels;     // mangled names in the captured image
  std::string image_kind;                     // "cubin" | "fatbin" | "ptx" (manifest image_kind)
  Language language = Language::Auto;
};

struct Candidate {
  fs::path file;  // where the kernel is defined
  uint32_t line = 0;
  fs::path tu;    // the translation unit that compiles it (may equal file)
  std::string why_not;  // empty for the chosen one
};

struct Result {
  Status status = Status::NoSourceDir;
  std::string summary;  // one line for the terminal
  std::string detail;   // what it means and what to do (may be several lines)
  names::KernelName name;
  names::Classification classification;
  fs::path tree;        // the source tree searched (canonical)
  fs::path definition;  // file with the kernel's definition
  fs::path library_root;  // set when `definition` is a library header outside the tree (Thrust,
                          // CUB): the include directory it was found under (library_headers.hpp)
  uint32_t line = 0;
  fs::path tu;
  std::optional<CompileCommand> command;
  fs::path compile_db;  // where the command came from
  SearchPaths search;   // the command's include paths (empty without one)
  IncludeClosure includes;  // the TU's local includes, traced with `search`
  std::vector<std::string> how;       // the evidence, in the order it was used
  std::vector<Candidate> candidates;  // every definition considered
  std::vector<std::string> notes;     // things the user should know (e.g. -rdc, PTX image)

  bool source_found() const { return status == Status::Found || status == Status::NoCompileCommand; }
};

// Never throws for what it cannot find: the Result says why. Throws Error(Usage) when the
// given --source-dir or --compile-commands does not exist (checked before the application runs
// by the CLI too), Error(Input) when compile_commands.json is malformed.
Result find_source(const Request& request);

}  // namespace kerncap::source
