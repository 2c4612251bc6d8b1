#pragma once
// Searching a source tree for a kernel's definition: list the C/C++/CUDA files, skip the
// ones that never mention the name, and parse the rest.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "source/definitions.hpp"
#include "source/includes.hpp"

namespace kerncap::source {

namespace fs = std::filesystem;

struct Located {
  fs::path file;  // canonical
  Definition def;
};

struct StringHit {
  fs::path file;
  uint32_t line = 0;
  bool with_global = false;  // the string also holds "__global__": kernel source compiled at run time
};

struct TreeScan {
  fs::path root;                 // canonical
  size_t files_listed = 0;       // C/C++/CUDA files under root
  size_t files_parsed = 0;       // those that mention the name
  std::vector<Located> named;    // every __global__ declaration or definition named like the kernel
  std::vector<StringHit> strings;  // the name inside string literals (NVRTC sources, cuModuleGetFunction)
  bool mentions_nvrtc = false;   // some file uses NVRTC or loads modules by hand
  std::set<std::string> markers; // macros that expand to __global__ anywhere in the tree
};

// Files with C/C++/CUDA extensions under `root`, skipping hidden directories and build trees
// (directories holding CMakeCache.txt). Sorted, canonical.
std::vector<fs::path> list_source_files(const fs::path& root);

TreeScan scan_tree(const fs::path& root, const std::string& name, SourceCache& cache);

// Every kernel (definitions and declarations) in a file; `markers` from TreeScan.
std::vector<Definition> kernels_in(const fs::path& file, const std::set<std::string>& markers, SourceCache& cache);

}  // namespace kerncap::source
