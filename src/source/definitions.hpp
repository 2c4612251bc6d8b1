#pragma once
// `__global__` functions in one file's tokens: name, enclosing namespaces, template-ness,
// linkage, parameter count, line. Handles `template <...>` heads, `__launch_bounds__(...)`
// and other attribute-like groups (and macros with arguments) before the name, `static`,
// `extern "C"` (prefix or block), qualified names (`void ns::k(...) {`), and object-like
// macros that expand to `__global__` (`#define KERNEL __global__`).
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "source/lexer.hpp"

namespace kerncap::source {

struct Definition {
  std::vector<std::string> scopes;  // namespaces around it, then qualifiers written on the name
  std::string name;
  bool is_template = false;
  bool extern_c = false;
  bool is_static = false;
  bool definition = true;           // false: a declaration or explicit instantiation (ends in ';')
  int param_count = 0;
  bool variadic = false;            // a parameter pack or C varargs: param_count is a minimum
  std::string params;               // the parameter list as written, tokens joined by spaces
  uint32_t line = 0;
  std::string qualified() const;    // "mf::scale"
};

// Object-like macros whose body holds `__global__` (or another such macro).
std::set<std::string> global_macros(const std::vector<Token>& toks, const std::set<std::string>& known = {});

// Every `__global__` function (definitions and declarations) outside function/class bodies.
// `markers`: extra identifiers that mean `__global__` (from global_macros of this file and
// of the headers it includes).
std::vector<Definition> find_kernels(const std::vector<Token>& toks, const std::set<std::string>& markers = {});

}  // namespace kerncap::source
