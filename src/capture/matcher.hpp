#pragma once
// Which launches are the target: a substring of the demangled (or mangled) name, or a
// regular expression. No CUDA here, unit tested.
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace kerncap::capture {

// abi::__cxa_demangle, or the name itself when it is not a C++ mangled name.
std::string demangle(const std::string& mangled);

class Matcher {
 public:
  // Throws std::regex_error on a bad regex (the launcher validates it first).
  Matcher(std::string pattern, bool regex);
  bool matches(const std::string& mangled, const std::string& demangled) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::unique_ptr<std::regex> regex_;
};

// The names most like `pattern` (case-insensitive substring hits first, then by edit
// distance of the pattern to the shortened name), at most `limit`.
std::vector<std::string> closest_names(const std::string& pattern, const std::vector<std::string>& names,
                                       size_t limit = 5);

}  // namespace kerncap::capture
