#include "names/match.hpp"

namespace kerncap::names {

Matcher::Matcher(std::string pattern, bool regex) : pattern_(std::move(pattern)) {
  if (regex) regex_ = std::make_shared<const std::regex>(pattern_, std::regex::ECMAScript);
}

Matcher Matcher::exact(std::string name) {
  Matcher m(std::move(name), false);
  m.exact_ = true;
  return m;
}

bool Matcher::matches(const std::string& mangled, const std::string& demangled) const {
  if (exact_) return mangled == pattern_ || demangled == pattern_;
  if (regex_) return std::regex_search(demangled, *regex_) || std::regex_search(mangled, *regex_);
  return demangled.find(pattern_) != std::string::npos || mangled.find(pattern_) != std::string::npos;
}

}  // namespace kerncap::names
