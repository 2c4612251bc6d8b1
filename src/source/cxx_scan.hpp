#pragma once
// What `kerncap locate` asks of C++ tokens beyond `__global__` definitions: where a class
// template or its specializations are defined (CUTLASS's GemmUniversal, ATen's functors),
// where a plain function is defined (ATen's launch_* functions whose lambdas name a kernel),
// and which host functions mention a kernel (its launch wrappers, what tests call).
// Comments never count: the lexer drops them.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "source/lexer.hpp"

namespace kerncap::source {

struct TypeDefinition {
  uint32_t line = 0;
  bool specialization = false;
  std::vector<std::string> head;  // identifiers between the <> of a partial specialization
};

// `struct NAME {`, `class NAME : base {`, `struct NAME<args> {` (a specialization). Not
// declarations (`class NAME;`), not uses (`NAME<T> x;`).
std::vector<TypeDefinition> type_definitions(const std::vector<Token>& toks, const std::string& name);

// `RET NAME(params) [const|noexcept|...] {`: line of each definition of a function NAME
// (member definitions `X::NAME(...) {` too). Calls and control statements never match.
std::vector<uint32_t> function_definitions(const std::vector<Token>& toks, const std::string& name);

// The names of the functions whose bodies mention `name` (launches `NAME<<<...>>>`,
// `cudaLaunchKernel(NAME, ...)`, pointers to it), outermost named function per mention.
std::set<std::string> functions_mentioning(const std::vector<Token>& toks, const std::string& name);

// Function-like macros whose body holds `__global__`: `#define DEFINE_KERNEL(name, ...) ... __global__ void name(...)`.
std::set<std::string> kernel_defining_macros(const std::vector<Token>& toks);

// `MACRO(NAME, ...)` where MACRO is one of `macros`: the line of each such definition.
std::vector<uint32_t> macro_kernel_definitions(const std::vector<Token>& toks, const std::set<std::string>& macros,
                                               const std::string& name);

}  // namespace kerncap::source
