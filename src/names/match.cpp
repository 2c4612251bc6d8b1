#include "names/match.hpp"

#include "names/regex_search.hpp"

namespace kerncap::names {

Matcher::Matcher(std::string pattern, bool regex) : pattern_(std::move(pattern)) {
  if (regex) {
    regex_ = std::make_shared<Compiled>();
    regex_->re = std::regex(pattern_, std::regex::ECMAScript);
  }
}

Matcher Matcher::exact(std::string name) {
  Matcher m(std::move(name), false);
  m.exact_ = true;
  return m;
}

bool Matcher::matches(const std::string& mangled, const std::string& demangled) const {
  if (exact_) return mangled == pattern_ || demangled == pattern_;
  if (regex_) {
    std::string key = mangled;
    key.push_back('\0');
    key += demangled;
    {
      std::lock_guard<std::mutex> lock(regex_->mu);
      if (auto it = regex_->answers.find(key); it != regex_->answers.end()) return it->second;
    }
    const bool hit = regex_search_text(demangled, regex_->re) || regex_search_text(mangled, regex_->re);
    std::lock_guard<std::mutex> lock(regex_->mu);
    if (regex_->answer_bytes + key.size() <= kMaxAnswerBytes) {
      regex_->answer_bytes += key.size();
      regex_->answers.emplace(std::move(key), hit);
    }
    return hit;
  }
  return demangled.find(pattern_) != std::string::npos || mangled.find(pattern_) != std::string::npos;
}

}  // namespace kerncap::names
