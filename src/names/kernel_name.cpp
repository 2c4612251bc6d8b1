#include "names/kernel_name.hpp"

#include <cctype>
#include <regex>

#include "names/demangle.hpp"
#include "names/text.hpp"

namespace kerncap::names {
namespace {

constexpr std::string_view kAnonToken = "{anon}";  // no spaces or parentheses: splits cleanly

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// Index of the bracket opening the group that closes at s[close] (scanning backwards).
std::optional<size_t> matching_open(std::string_view s, size_t close, char open_c, char close_c) {
  int depth = 0, parens = 0;
  for (size_t i = close + 1; i-- > 0;) {
    const char c = s[i];
    if (open_c == '<' && c == ')') ++parens;  // "(1 > 2)" inside template arguments
    else if (open_c == '<' && c == '(') --parens;
    if (parens > 0) continue;
    if (c == close_c) ++depth;
    else if (c == open_c && --depth == 0) return i;
  }
  return std::nullopt;
}

// The last space outside brackets: separates a template function's return type.
std::optional<size_t> last_top_level_space(std::string_view s) {
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == '>' || c == ')' || c == ']') ++depth;
    else if (c == '<' || c == '(' || c == '[') --depth;
    else if (c == ' ' && depth == 0) return i;
  }
  return std::nullopt;
}

std::vector<std::string> split_scopes(std::string_view name) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    else if (c == '>' || c == ')') --depth;
    else if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') {
      parts.push_back(trim(name.substr(start, i - start)));
      start = i + 2;
      ++i;
    }
  }
  parts.push_back(trim(name.substr(start)));
  for (auto& p : parts)
    if (p == kAnonToken) p = kAnonymousNamespace;
  return parts;
}

std::string anon_hint(std::string_view mangled) {
  static const std::regex re(R"(_GLOBAL__N__[0-9A-Za-z]+_(\d+)_)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(mangled.begin(), mangled.end(), m, re)) return {};
  const size_t len = std::stoul(m[1].str());
  const size_t at = static_cast<size_t>(m.position(0) + m.length(0));
  if (len == 0 || at + len > mangled.size()) return {};
  return std::string(mangled.substr(at, len));
}

}  // namespace

std::vector<std::string> split_top_level(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0, parens = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '(' || c == '[' || c == '{') ++parens;
    else if (c == ')' || c == ']' || c == '}') --parens;
    else if (parens == 0 && c == '<') ++depth;
    else if (parens == 0 && c == '>') --depth;
    else if (c == ',' && depth <= 0 && parens <= 0) {
      std::string part = trim(list.substr(start, i - start));
      if (!part.empty() || i < list.size()) out.push_back(part);
      start = i + 1;
    }
  }
  if (out.size() == 1 && out[0].empty()) out.clear();
  return out;
}

std::string file_hint_of(std::string_view filename) {
  std::string s(filename);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return s;
}

std::string KernelName::qualified() const {
  std::string q;
  for (const auto& s : scopes) q += s + "::";
  return q + base;
}

KernelName parse_kernel_name(std::string_view mangled, std::string_view demangled) {
  KernelName k;
  k.mangled = std::string(mangled);
  // A capture made before kerncap knew nvcc's static prefix recorded such a name undemangled.
  k.demangled = demangled.empty() || demangled == mangled ? demangle(mangled) : std::string(demangled);
  // Without a mangled name, a demangled one still says it is C++ by its parameter list.
  k.cxx = mangled.empty() ? k.demangled.ends_with(")")
                          : is_mangled(mangled) && k.demangled != k.mangled;
  if (!k.cxx) {
    k.base = trim(k.demangled.empty() ? k.mangled : k.demangled);
    return k;
  }
  std::string s = k.demangled;
  replace_all(s, kAnonymousNamespace, kAnonToken);
  s = trim(s);
  std::string_view head = s;
  if (!head.empty() && head.back() == ')') {
    if (auto open = matching_open(head, head.size() - 1, '(', ')')) {
      k.params = split_top_level(head.substr(*open + 1, head.size() - *open - 2));
      if (k.params.size() == 1 && k.params[0] == "void") k.params.clear();
      head = head.substr(0, *open);
    }
  }
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  if (!head.empty() && head.back() == '>') {
    if (auto lt = matching_open(head, head.size() - 1, '<', '>')) {
      k.is_template = true;
      k.template_args = split_top_level(head.substr(*lt + 1, head.size() - *lt - 2));
      head = head.substr(0, *lt);
    }
  }
  if (auto sp = last_top_level_space(head)) head = head.substr(*sp + 1);
  auto parts = split_scopes(head);
  k.base = parts.back();
  parts.pop_back();
  k.scopes = std::move(parts);
  k.anon_file_hint = anon_hint(k.mangled);
  return k;
}

}  // namespace kerncap::names
