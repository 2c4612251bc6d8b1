#include "source/cxx_scan.hpp"

#include <optional>
#include <regex>

namespace kerncap::source {
namespace {

bool punct(const Token& t, std::string_view s) { return t.kind == TokKind::Punct && t.text == s; }
bool ident(const Token& t) { return t.kind == TokKind::Ident; }

const std::set<std::string>& not_functions() {
  static const std::set<std::string> s = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
                                          "alignof", "static_assert", "else", "do", "new", "delete", "throw",
                                          "__launch_bounds__", "__attribute__", "noexcept", "operator", "defined"};
  return s;
}

// Index of the token that closes the group opened at `open` ("(" / "<" / "{" / "[").
std::optional<size_t> close_of(const std::vector<Token>& t, size_t open) {
  const std::string o = t[open].text;
  const std::string c = o == "(" ? ")" : o == "<" ? ">" : o == "{" ? "}" : "]";
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (punct(t[i], o)) ++depth;
    else if (punct(t[i], c) && --depth == 0) return i;
    else if (o == "<" && (punct(t[i], ";") || punct(t[i], "{"))) return std::nullopt;  // a less-than
  }
  return std::nullopt;
}

std::optional<size_t> open_of(const std::vector<Token>& t, size_t close) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (punct(t[i], ")")) ++depth;
    else if (punct(t[i], "(") && --depth == 0) return i;
  }
  return std::nullopt;
}

// After a parameter list closing at `close`: does a body follow (skipping const, noexcept,
// override, `-> type`, attributes)? Returns the "{" index.
std::optional<size_t> body_after(const std::vector<Token>& t, size_t close) {
  for (size_t i = close + 1; i < t.size() && i < close + 40; ++i) {
    const Token& k = t[i];
    if (punct(k, "{")) return i;
    if (punct(k, ";") || punct(k, "=") || punct(k, ",") || punct(k, ")") || punct(k, "}")) return std::nullopt;
    if (punct(k, ":") ) return std::nullopt;  // a constructor's initializers: not what we look for
    if (punct(k, "(")) {
      auto c = close_of(t, i);
      if (!c) return std::nullopt;
      i = *c;
    }
  }
  return std::nullopt;
}

// The function a "{" opens, if it opens a function body: the identifier before the "(".
std::string function_of_brace(const std::vector<Token>& t, size_t brace) {
  size_t i = brace;
  // skip const / noexcept / override / final / mutable / -> type / attributes back to ")"
  while (i > 0 && i + 16 > brace) {
    --i;
    if (punct(t[i], ")")) break;
    if (t[i].kind == TokKind::Directive) continue;
    if (ident(t[i]) || punct(t[i], "->") || punct(t[i], "::") || punct(t[i], "*") || punct(t[i], "&") ||
        punct(t[i], "<") || punct(t[i], ">"))
      continue;
    return {};
  }
  if (!punct(t[i], ")")) return {};
  auto open = open_of(t, i);
  if (!open || *open == 0) return {};
  size_t n = *open - 1;
  if (punct(t[n], ">")) {  // NAME<args>(...)
    int depth = 0;
    for (size_t j = n + 1; j-- > 0;) {
      if (punct(t[j], ">")) ++depth;
      else if (punct(t[j], "<") && --depth == 0) { n = j ? j - 1 : 0; break; }
    }
  }
  if (!ident(t[n]) || not_functions().count(t[n].text)) return {};
  return t[n].text;
}

}  // namespace

std::vector<TypeDefinition> type_definitions(const std::vector<Token>& t, const std::string& name) {
  std::vector<TypeDefinition> out;
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (!(ident(t[i]) && (t[i].text == "struct" || t[i].text == "class")) || !(ident(t[i + 1]) && t[i + 1].text == name))
      continue;
    if (i > 0 && ident(t[i - 1]) && t[i - 1].text == "enum") continue;
    TypeDefinition d;
    d.line = t[i + 1].line;
    size_t j = i + 2;
    if (punct(t[j], "<")) {
      auto c = close_of(t, j);
      if (!c) continue;
      d.specialization = true;
      for (size_t k = j + 1; k < *c; ++k)
        if (ident(t[k])) d.head.push_back(t[k].text);
      j = *c + 1;
    }
    // final, alignas(...), `: public Base<...>` up to "{"; a ";" first means a declaration.
    bool body = false;
    for (; j < t.size() && j < i + 400; ++j) {
      if (punct(t[j], "{")) { body = true; break; }
      if (punct(t[j], ";") || punct(t[j], ")") || punct(t[j], "=")) break;
    }
    if (body) out.push_back(std::move(d));
  }
  return out;
}

std::vector<uint32_t> function_definitions(const std::vector<Token>& t, const std::string& name) {
  std::vector<uint32_t> out;
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    if (!ident(t[i]) || t[i].text != name) continue;
    size_t open = i + 1;
    if (punct(t[open], "<")) {
      auto c = close_of(t, open);
      if (!c) continue;
      open = *c + 1;
    }
    if (open >= t.size() || !punct(t[open], "(")) continue;
    // What comes before the name must be a type (or a qualifier of the name), not an
    // operator, a member access or a keyword that makes it an expression.
    const Token& before = t[i - 1];
    const bool typed = (ident(before) && !not_functions().count(before.text)) || punct(before, "*") ||
                       punct(before, "&") || punct(before, ">") || punct(before, "::");
    if (!typed) continue;
    auto c = close_of(t, open);
    if (!c || !body_after(t, *c)) continue;
    out.push_back(t[i].line);
  }
  return out;
}

std::set<std::string> functions_mentioning(const std::vector<Token>& t, const std::string& name) {
  std::set<std::string> out;
  // One entry per open brace: the outermost named function around it ("" outside any).
  std::vector<std::string> stack;
  for (size_t i = 0; i < t.size(); ++i) {
    if (punct(t[i], "{")) {
      const std::string outer = stack.empty() ? std::string() : stack.back();
      stack.push_back(outer.empty() ? function_of_brace(t, i) : outer);
    } else if (punct(t[i], "}")) {
      if (!stack.empty()) stack.pop_back();
    } else if (ident(t[i]) && t[i].text == name && !stack.empty() && !stack.back().empty() && stack.back() != name) {
      out.insert(stack.back());
    }
  }
  return out;
}

std::set<std::string> kernel_defining_macros(const std::vector<Token>& t) {
  std::set<std::string> out;
  static const std::regex re(R"(^\s*define\s+([A-Za-z_]\w*)\()");
  for (const auto& k : t) {
    if (k.kind != TokKind::Directive || k.text.find("__global__") == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(k.text, m, re)) out.insert(m[1].str());
  }
  return out;
}

std::vector<uint32_t> macro_kernel_definitions(const std::vector<Token>& t, const std::set<std::string>& macros,
                                               const std::string& name) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i + 2 < t.size(); ++i)
    if (ident(t[i]) && macros.count(t[i].text) && punct(t[i + 1], "(") && ident(t[i + 2]) && t[i + 2].text == name)
      out.push_back(t[i].line);
  return out;
}

}  // namespace kerncap::source
