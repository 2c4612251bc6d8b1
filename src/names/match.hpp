#pragma once
// Which kernels a user's pattern names: a substring of the demangled (or mangled) name, or
// an ECMAScript regular expression searched in either form. One definition, used by the
// injected library (which launch is the target, which images to keep), `kerncap profile`
// (its --filter and the dispatch index it suggests) and the CLI's diagnosis.
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <unordered_map>

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
  // A regex and what it answered per name pair (the injected library asks for the same
  // functions at every launch; a long name's search runs on a thread of its own,
  // names/regex_search.hpp). Shared: a Matcher is cheap to copy.
  struct Compiled {
    std::regex re;
    std::mutex mu;
    std::unordered_map<std::string, bool> answers;  // key: mangled, NUL, demangled
    size_t answer_bytes = 0;                          // at most kMaxAnswerBytes of keys
  };
  static constexpr size_t kMaxAnswerBytes = size_t{64} << 20;
  std::string pattern_;
  std::shared_ptr<Compiled> regex_;
  bool exact_ = false;
};

}  // namespace kerncap::names
