#include "names/shorten.hpp"

#include <cctype>
#include <regex>

#include "names/text.hpp"

namespace kerncap::names {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Removes namespace prefix `ns` ("std::") where it starts a name, not inside one ("cutlass::"
// must survive removing "at::").
void drop_namespace(std::string& s, std::string_view ns) {
  for (size_t pos = s.find(ns); pos != std::string::npos; pos = s.find(ns, pos)) {
    if (pos > 0 && ident_char(s[pos - 1])) {
      pos += ns.size();
      continue;
    }
    s.erase(pos, ns.size());
  }
}

// Removes the trailing parameter list "(...)" (balanced, so lambdas inside stay intact).
std::string drop_parameters(std::string s) {
  if (s.empty() || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    else if (s[i] == '(' && --depth == 0) return i == 0 ? s : s.substr(0, i);
  }
  return s;
}

// Replaces the contents of every <...> nested deeper than `keep` levels with "...".
std::string collapse_templates(std::string_view s, int keep) {
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') {
      if (depth == keep) out += "<...";
      else if (depth < keep) out += c;
      ++depth;
    } else if (c == '>') {
      --depth;
      if (depth <= keep) out += c;
    } else if (depth <= keep) {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string shorten(std::string_view demangled, size_t width) {
  std::string s(strip_void(demangled));
  replace_all(s, "(anonymous namespace)::", "");
  s = drop_parameters(std::move(s));
  for (std::string_view ns : {"at::native::", "std::", "c10::", "at::"}) drop_namespace(s, ns);
  static const std::regex cub_ns("CUB_[0-9_]+_NS::");  // cub's versioned inline namespace
  s = std::regex_replace(s, cub_ns, "");
  replace_all(s, "> >", ">>");
  if (s.size() > width) s = collapse_templates(s, 1);
  if (s.size() > width) s = collapse_templates(s, 0);
  if (width >= 4 && s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

}  // namespace kerncap::names
