#pragma once
// Writes the reproducer project next to a capture (OUT/capture):
//   README.md          what was captured, where the source is, how to use the targets
//   Makefile           run | validate | recompile | run-variant | validate-variant | ncu | sanitize | sass
//   compile.json       the original compile command and the rewritten one (versioned)
//   kernel_variant.cu  the kernel's translation unit, to edit        (when the source was found)
//   kernel_instance.cu the captured kernel without the rest of its unit (when it can be made)
//   src/               mirrored local includes                         (when the source was found)
// Always written, source or not: without source, replay targets work and `make recompile`
// says why it is unavailable. An existing kernel_variant.cu (and src/) is never overwritten.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "format/capture_dir.hpp"
#include "format/out_layout.hpp"
#include "reproducer/instance.hpp"
#include "reproducer/mirror.hpp"
#include "reproducer/rewrite.hpp"
#include "source/finder.hpp"

namespace kerncap::reproducer {

namespace fs = std::filesystem;

inline constexpr const char* kCompileJsonFormat = "kerncap-compile";
inline constexpr int kCompileJsonVersion = 1;
inline constexpr const char* kVariantCubin = format::out::kOptimizedCubin.data();
inline constexpr const char* kInstanceSource = format::out::kKernelInstanceCu.data();

struct GenerateRequest {
  fs::path out;                      // OUT; the capture must be complete in OUT/capture
  source::Result found;
  std::vector<std::string> defines;  // -D from `kerncap extract`
  fs::path kerncap;                  // the binary the Makefile calls (absolute)
};

struct Generated {
  bool recompile_available = false;
  std::string unavailable_reason;    // one line, when not available
  std::optional<CompileSpec> spec;
  std::optional<Mirror> mirror;
  std::string arch;
  // What `make recompile` compiles: kInstanceSource (only the captured instantiation) or
  // kVariantSource (the whole unit, then `whole_unit_reason` says why). Empty without recompile.
  std::string unit;
  std::string whole_unit_reason;
  std::optional<InstanceUnit> instance;
  std::vector<std::string> notes;    // for the terminal: kept edits, -rdc, the unit compiled, ...
};

Generated generate_reproducer(const GenerateRequest& request);

// The SM the variant is compiled for: the captured device's sm_XY, with the 'a' suffix when
// the captured cubin is arch-specific (sm_90a: wgmma, setmaxnreg...).
std::string variant_arch(const format::Capture& capture);

}  // namespace kerncap::reproducer
