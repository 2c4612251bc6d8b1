#include "names/match.hpp"

namespace kerncap::names {

Matcher::Matcher(std::string pattern, bool regex) : pattern_(std::move(pattern)) {
  if (regex) regex_ = std::make_shared<const std::regex>(pattern_, std::regex::ECMAScript);
}

bool Matcher::matches(const std::string& mangled, const std::string& demangled) const {
  if (regex_) return std::regex_search(demangled, *regex_) || std::regex_search(mangled, *regex_);
  return demangled.find(pattern_) != std::string::npos || mangled.find(pattern_) != std::string::npos;
}

}  // namespace kerncap::names
