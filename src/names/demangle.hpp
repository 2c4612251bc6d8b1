#pragma once
// Kernel names as the driver reports them: demangling, and the bare function name the
// classifier and the matchers look at. Pure string work (no CUDA), unit tested.
#include <string>
#include <string_view>

namespace kerncap::names {

// True for an Itanium-mangled C++ name (`_Z...`).
bool is_mangled(std::string_view name);

// abi::__cxa_demangle; names that are not mangled C++ (Triton, cuBLAS, extern "C") and
// names the demangler rejects come back as they are.
std::string demangle(std::string_view mangled);

// The qualified function name without return type, template arguments or parameters:
// "void at::native::(anonymous namespace)::f<4>(int)" -> "at::native::{anon}::f".
std::string function_name(std::string_view demangled);

}  // namespace kerncap::names
