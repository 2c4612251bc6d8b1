#include "source/messages.hpp"

#include <fmt/format.h>

namespace kerncap::source {

std::string display(const fs::path& p, const fs::path& tree) {
  if (!tree.empty() && inside(p, tree)) return p.lexically_relative(tree).string();
  return p.string();
}

void classify_triton(Result& r, bool forced) {
  r.status = Status::Triton;
  r.summary = forced ? "Triton kernel (--language triton): the C++ source finder is skipped"
                     : fmt::format("'{}' looks like a Triton kernel (a plain name, no C++ definition found)",
                                   r.name.base);
  r.detail =
      "Triton kernels are compiled at run time from Python: kerncap's Triton path records their source while\n"
      "the application runs (extract sets up its shim for Python applications) and writes kernel_variant.py\n"
      "and reproducer.py into the output directory (docs/triton.md). The C++ Makefile targets run, validate,\n"
      "ncu, sanitize and sass work on the captured cubin.";
  if (!forced)
    r.detail += "\nIf it is an extern \"C\" CUDA kernel instead, give --source-dir (and --language cuda).";
}

void classify_library(Result& r) {
  r.status = Status::LibraryKernel;
  const std::string kind(names::to_string(r.classification.kind));
  r.summary = fmt::format("{} library kernel: precompiled inside a library binary, no source to recompile", kind);
  r.detail = fmt::format(
      "'{}' comes precompiled in a {} binary (closed source, or built outside this application), so there is\n"
      "no translation unit to edit. The reproducer still replays, validates, profiles (make ncu) and\n"
      "disassembles (make sass) the captured code. To try a different kernel, change the library call\n"
      "(algorithm, layout, workspace) in the application, or write a replacement kernel with the same\n"
      "parameters and pass its cubin to `kerncap validate --cubin`. Override with --language cuda if the\n"
      "source really is in --source-dir (e.g. CUTLASS templates compiled by the application).",
      r.name.demangled, kind);
}

void classify_no_source_dir(Result& r) {
  r.status = Status::NoSourceDir;
  r.summary = "no --source-dir given: source not searched";
  r.detail =
      "Replay and validation work without source. To edit and recompile the kernel, extract again with\n"
      "--source-dir DIR (the tree the application was built from) and --compile-commands\n"
      "BUILD/compile_commands.json (CMake: -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; Make: bear -- make).";
}

void classify_runtime(const Request& q, const TreeScan& scan, Result& r) {
  r.status = Status::RuntimeGenerated;
  if (q.image_kind == "ptx") {
    r.summary = "the kernel was loaded as PTX and compiled by the driver at run time (NVRTC or PTX JIT)";
  } else {
    r.summary = fmt::format("'{}' appears only inside string literals: its code is generated at run time (NVRTC)",
                            r.name.base);
  }
  r.detail = "There is no translation unit that nvcc compiles for it.";
  for (size_t i = 0; i < scan.strings.size() && i < 5; ++i)
    r.detail += fmt::format("\n  {}:{}: the name in a string{}", display(scan.strings[i].file, r.tree),
                            scan.strings[i].line, scan.strings[i].with_global ? " with __global__ (kernel source)" : "");
  r.detail +=
      "\nTo try a variant: edit the generated source, compile it for this GPU (nvrtcGetCUBIN, or nvcc -cubin on the\n"
      "text saved to a .cu file) and run `kerncap validate OUT --cubin FILE`. Replay works on the captured image.";
}

void classify_not_in_tree(const TreeScan& scan, Result& r) {
  r.status = Status::NotInTree;
  r.summary = fmt::format("no __global__ definition of {} under {} ({} source files searched)", r.name.qualified(),
                          r.tree.string(), scan.files_listed);
  r.detail = fmt::format(
      "The kernel is in the captured image, but not defined in this tree. Is --source-dir the tree the\n"
      "application was built from (and not, e.g., a library it links)?");
  size_t shown = 0;
  for (const auto& l : scan.named) {
    if (shown++ == 5) break;
    r.detail += fmt::format("\n  {}:{}: {} {}{}", display(l.file, r.tree), l.def.line,
                            l.def.definition ? "a definition of" : "only a declaration of", l.def.qualified(),
                            l.def.qualified() != r.name.qualified() ? " (another scope)" : "");
  }
  if (scan.named.empty() && scan.files_parsed)
    r.detail += fmt::format("\n  {} file(s) mention '{}' but none defines it as a __global__ function (a macro\n"
                            "  with arguments that writes the definition cannot be followed without the preprocessor)",
                            scan.files_parsed, r.name.base);
}

void classify_ambiguous(const std::vector<Candidate>& left, Result& r) {
  r.status = Status::Ambiguous;
  r.summary = fmt::format("{} candidate definitions of {} and nothing told them apart", left.size(), r.name.qualified());
  r.detail = "Candidates:";
  for (const auto& c : left)
    r.detail += fmt::format("\n  {}:{} (translation unit {})", display(c.file, r.tree), c.line, display(c.tu, r.tree));
  r.detail +=
      "\nNarrow --source-dir to the application's own tree, or give --compile-commands from the build that ran\n"
      "(its object files then say which unit holds the kernel).";
}

void classify_found(Result& r, const std::string& no_command_reason) {
  const std::string where = fmt::format("{}:{}", display(r.definition, r.tree), r.line);
  if (r.command) {
    r.status = Status::Found;
    r.summary = fmt::format("{} at {} (translation unit {}, compile command from {})", r.name.qualified(), where,
                            display(r.tu, r.tree), r.compile_db.filename().string());
    return;
  }
  r.status = Status::NoCompileCommand;
  r.summary = fmt::format("{} at {} (translation unit {}); no compile command: recompile not available",
                          r.name.qualified(), where, display(r.tu, r.tree));
  r.detail = no_command_reason +
             "\nReplay and validation work. To recompile, give the build's compilation database:\n"
             "  CMake: cmake -DCMAKE_EXPORT_COMPILE_COMMANDS=ON (writes BUILD/compile_commands.json)\n"
             "  Make:  bear -- make   (or: compiledb make)\n"
             "then extract again with --compile-commands BUILD/compile_commands.json.";
}

}  // namespace kerncap::source
