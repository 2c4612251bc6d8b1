#pragma once
// Kernel names as the driver reports them: demangling, and the bare function name the
// classifier and the matchers look at. Pure string work (no CUDA), unit tested.
#include <string>
#include <string_view>

namespace kerncap::names {

// nvcc names file-static kernels (and, with relocatable device code, those of an anonymous
// namespace) `__nv_static_<n>__<hash>_<len>_<file>_cu_<hash>__Z...` on the device: an Itanium
// name behind a prefix. This returns the Itanium part (`_Z...`) of such a name, the name
// itself when it starts with `_Z`, and "" otherwise.
std::string_view itanium_part(std::string_view name);

// True for an Itanium-mangled C++ name (`_Z...`, or one behind nvcc's static prefix).
bool is_mangled(std::string_view name);

// abi::__cxa_demangle of the Itanium part; names that are not mangled C++ (Triton, cuBLAS,
// extern "C") and names the demangler rejects come back as they are.
std::string demangle(std::string_view mangled);

// The qualified function name without return type, template arguments or parameters:
// "void at::native::(anonymous namespace)::f<4>(int)" -> "at::native::{anon}::f".
std::string function_name(std::string_view demangled);

}  // namespace kerncap::names
