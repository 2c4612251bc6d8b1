#pragma once
// Which kernels a host object file (the .o a compile command wrote) holds: the device
// code in its .nv_fatbin section, and the host launch stubs nvcc emits for each kernel
// (__device_stub__<mangled>). This is how the finder tells apart translation units that
// include the same templated kernel with different instantiations.
#include <filesystem>
#include <set>
#include <string>

namespace kerncap::source {

// Mangled kernel names; empty when the file is missing or not an ELF64 object. Never throws.
std::set<std::string> object_kernel_names(const std::filesystem::path& object);

}  // namespace kerncap::source
