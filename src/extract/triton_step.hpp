#pragma once
// Triton around a capture: before the run, Python applications get the compile-metadata
// shim (python/kerncap/triton_shim, inert unless Triton is used); after a capture of a
// Triton kernel, the Python generator writes kernel_variant.py and reproducer.py.
#include <filesystem>
#include <map>
#include <string>

#include "extract/environment.hpp"

namespace kerncap::extract {

// Where the kerncap Python package lives: HostEnv::python_dir, else the one installed with
// this executable (share/kerncap/python beside bin/, or, pip-installed, the site-packages
// folder whose kerncap/bin holds it), else the source tree.
fs::path python_dir(const HostEnv& h);

// Adds the shim to PYTHONPATH and tells it where to record (OUT/triton).
void add_triton_shim(std::map<std::string, std::string>& env, const fs::path& out, const HostEnv& h);

// After a capture: when the shim recorded a Triton kernel, runs the generator. Its failure
// is a note, not an error (the capture and the C++ reproducer stand on their own).
void write_triton_reproducer(const fs::path& out, bool quiet, const HostEnv& h);

}  // namespace kerncap::extract
