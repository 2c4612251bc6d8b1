#pragma once
// A kernel's name taken apart: the scopes, the bare name, template arguments and parameter
// types of a demangled C++ name ("void mf::scale<float, 4>(float*, int)"), or a plain
// identifier for `extern "C"` kernels. What the source finder matches definitions against, what
// replay reads parameter types from, and what the reproducer instantiates.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::names {

inline constexpr const char* kAnonymousNamespace = "(anonymous namespace)";

struct KernelName {
  std::string mangled;
  std::string demangled;
  bool cxx = false;                  // a mangled C++ name (else extern "C" or not C++ at all)
  std::vector<std::string> scopes;   // namespaces, outermost first; "(anonymous namespace)" kept
  std::string base;                  // "scale"
  bool is_template = false;
  std::vector<std::string> template_args;  // {"float", "4"}
  std::vector<std::string> params;         // {"float*", "int"}; empty for "()" and "(void)"
  // nvcc names an anonymous namespace after its file ("_GLOBAL__N__<hash>_7_a_cu_<hash>"):
  // "a_cu" here, the file name with every non-identifier character as '_'.
  std::string anon_file_hint;

  std::string qualified() const;  // "mf::scale"
};

// `demangled` may be empty: it is then computed from `mangled`.
KernelName parse_kernel_name(std::string_view mangled, std::string_view demangled = {});

// Splits "a, b<c, d>, e(f, g)" at top-level commas, trimming spaces.
std::vector<std::string> split_top_level(std::string_view list);

// The file name as nvcc spells it in anonymous namespace names: "conv 1d.cu" -> "conv_1d_cu".
std::string file_hint_of(std::string_view filename);

}  // namespace kerncap::names
