#pragma once
// Kernel names: demangling, the bare function name the classifier looks at, and the
// shortened form the terminal table shows. Pure string work, unit tested.
#include <string>
#include <string_view>

namespace kerncap::profile {

// abi::__cxa_demangle; names that are not mangled C++ (Triton, cuBLAS) come back as is.
std::string demangle(std::string_view mangled);

// True for an Itanium-mangled C++ name (`_Z...`).
bool is_mangled(std::string_view name);

// The qualified function name without return type, template arguments or parameters:
// "void at::native::(anonymous namespace)::f<4>(int)" -> "at::native::{anon}::f".
std::string function_name(std::string_view demangled);

// A readable form that fits `width` columns: drops the return type, the parameter list
// and noisy namespaces, then collapses nested template arguments, then truncates.
std::string shorten(std::string_view demangled, size_t width);

}  // namespace kerncap::profile
