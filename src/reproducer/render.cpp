#include "reproducer/render.hpp"

#include <cctype>

#include <fmt/format.h>

#include "common/error.hpp"
#include "source/args.hpp"

namespace kerncap::reproducer {

std::string render(std::string_view t, const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(t.size());
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] == '@') {
      size_t j = i + 1;
      while (j < t.size() && (std::isupper(static_cast<unsigned char>(t[j])) || std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '_'))
        ++j;
      if (j > i + 1 && j < t.size() && t[j] == '@' && std::isupper(static_cast<unsigned char>(t[i + 1]))) {
        const std::string name(t.substr(i + 1, j - i - 1));
        auto it = vars.find(name);
        if (it == vars.end()) fail(ErrorKind::Internal, fmt::format("reproducer template: no value for @{}@", name));
        out += it->second;
        i = j + 1;
        continue;
      }
    }
    out += t[i++];
  }
  return out;
}

std::string make_word(std::string_view arg, bool in_variable) {
  std::string q = source::shell_quote(arg), out;
  for (char c : q) {
    if (c == '$') out += "$$";
    else if (c == '#' && in_variable) out += "\\#";
    else out += c;
  }
  return out;
}

std::string make_words(const std::vector<std::string>& args, bool in_variable) {
  std::string s;
  for (const auto& a : args) {
    if (!s.empty()) s += ' ';
    s += make_word(a, in_variable);
  }
  return s;
}

std::string make_echo_lines(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string line(text.substr(start, nl - start));
    out += "\t@echo " + make_word(line.empty() ? std::string(" ") : line, false) + "\n";
    start = nl + 1;
  }
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace kerncap::reproducer
