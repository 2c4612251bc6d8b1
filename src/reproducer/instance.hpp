#pragma once
// kernel_instance.cu: a translation unit that builds only the captured template
// instantiation, so `make recompile` after an edit compiles one kernel instead of every
// kernel of the original unit (a unit may instantiate a template dozens of times, as
// llama.cpp's mmq instance files do).
//
// It holds the unit's leading preprocessor lines (its macros and includes, as written into
// kernel_variant.cu, so they reach the mirror), which must reach the header that defines
// the template, then one explicit instantiation spelled from the demangled name:
//     template __global__ void mf::scale_kernel<float, 4>(float*, float const*, int, int);
// A kernel defined in the unit itself: kernel_instance.cu defines KERNCAP_INSTANCE_ONLY and
// includes kernel_variant.cu, which leaves out everything after the kernel's definition under
// that macro (the host code that launches the other instantiations), then instantiates it
// (a kernel that is not a template needs no instantiation: its definition is compiled).
// When that cannot be done safely the whole unit is compiled, as before, and `reason` says
// why in one line (the Makefile, README and extract print it).
#include <cstdint>
#include <string>
#include <vector>

#include "names/kernel_name.hpp"
#include "source/finder.hpp"
#include "source/lexer.hpp"

namespace kerncap::reproducer {

struct InstanceUnit {
  std::string text;           // kernel_instance.cu; empty when the whole unit must be compiled
  std::string instantiation;  // the explicit instantiation line
  uint32_t prelude_lines = 0; // how many leading lines of the unit it copies (includes_unit: the kernel's last line)
  std::string reason;         // why not, one line (empty when available)
  // A kernel defined in the unit itself: kernel_variant.cu as it must be written, with the
  // lines after the kernel's definition guarded by kInstanceOnly (kernel_instance.cu includes
  // it with the macro defined). Empty otherwise.
  std::string variant_text;
  bool available() const { return !text.empty(); }
  // kernel_instance.cu includes kernel_variant.cu up to the kernel (a kernel defined in the
  // unit), rather than the unit's leading lines.
  bool includes_unit() const;
};

// `#include "kernel_variant.cu"`: how kernel_instance.cu includes the unit (format/out_layout's name).
std::string unit_include_line();

// The macro kernel_instance.cu defines before including kernel_variant.cu, for a kernel
// defined in the unit: what follows the kernel's definition is left out under it.
inline constexpr const char* kInstanceOnly = "KERNCAP_INSTANCE_ONLY";

// Where the definition of `base` (the kernel's unqualified name) that starts at or after
// `line` ends: the line of its body's closing brace, and how many blocks (namespaces,
// extern "C") are open around it. 0 lines when there is no such definition.
struct DefinitionEnd {
  uint32_t line = 0;
  int open_blocks = 0;
  bool code_after_on_line = false;  // more than a comment follows the closing brace on its line
};
DefinitionEnd definition_end(const std::vector<source::Token>& toks, const std::string& base, uint32_t line);

// With `open` #if blocks open at token `cut` (a unit wrapped in an include guard): the line of
// the #endif closing the first of them when all close at the unit's end with nothing else
// after; 0 when none is open; UINT32_MAX when they close elsewhere.
uint32_t guard_end_line(const std::vector<source::Token>& toks, size_t cut, int open);

// Functions used (called or declared) before token `cut` and defined from it on.
std::vector<std::string> defined_after_use(const std::vector<source::Token>& toks, size_t cut);

// The explicit instantiation of the kernel `n` names, or "" with `why` set when it cannot be
// written as C++ (not a template, an anonymous namespace, lambdas or unnamed types among
// the arguments, characters a C++ declaration cannot hold).
std::string explicit_instantiation(const names::KernelName& n, std::string& why);

// How many leading lines of a unit are preprocessor lines (and comments): up to its first
// line of code, cut back to before an #if still open there. 0 when the unit starts with code.
uint32_t prelude_end(const std::vector<source::Token>& toks);

// `unit_text`: the unit as written into kernel_variant.cu (includes rewritten to the
// mirror; line numbers unchanged). `edit_file`: where the user edits the kernel (for the
// file's header comment).
InstanceUnit plan_instance(const source::Result& found, const std::string& unit_text, const std::string& edit_file);

}  // namespace kerncap::reproducer
