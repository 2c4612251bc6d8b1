#pragma once
// `extract --top N --from profile.json`: the N kernels that took the most GPU time in a
// profile written by `kerncap profile` (profile/report_json.hpp). The file is untrusted
// input (it may come from another machine, or be edited): it is read in bounded size and
// nesting, and every field is taken only when it is exactly what it must be; anything else
// is an Error(Input) naming the field.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::extract {

struct ProfileKernel {
  uint64_t rank = 0;      // 1 = the most GPU time
  std::string mangled;    // as launched: the exact name the target matches
  std::string demangled;  // for messages and the capture directory's name ("" when unknown)
  bool in_graph = false;  // some of its launches ran inside a CUDA graph
};

// The kernels ranked 1..n (fewer when the profile has fewer). Throws Error(Input).
std::vector<ProfileKernel> top_kernels(std::string_view text, size_t n, const std::string& file_name);
// Reads the file first (a regular file, at most format::kMaxJsonBytes).
std::vector<ProfileKernel> top_kernels_from_file(const std::filesystem::path& file, size_t n);

}  // namespace kerncap::extract
