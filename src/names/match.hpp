#pragma once
// Which kernels a user's pattern names: a substring of the demangled (or mangled) name, or
// an ECMAScript regular expression searched in either form. One definition, used by the
// injected library (which launch is the target, which images to keep), `kerncap profile`
// (its --filter and the dispatch index it suggests) and the CLI's diagnosis.
#include <memory>
#include <regex>
#include <string>

namespace kerncap::names {

class Matcher {
 public:
  // Throws std::regex_error on a bad regex (the launcher validates it first).
  Matcher(std::string pattern, bool regex);
  // The whole mangled or demangled name, nothing more (`extract --from profile.json`: a
  // mangled name can be a substring of another's, and long names make slow regexes).
  static Matcher exact(std::string name);
  bool matches(const std::string& mangled, const std::string& demangled) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::shared_ptr<const std::regex> regex_;  // shared: a Matcher is cheap to copy
  bool exact_ = false;
};

}  // namespace kerncap::names
