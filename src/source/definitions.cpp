#include "source/definitions.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace kerncap::source {
namespace {

bool is(const Token& t, TokKind k, std::string_view text) { return t.kind == k && t.text == text; }
bool punct(const Token& t, std::string_view text) { return is(t, TokKind::Punct, text); }
bool ident(const Token& t, std::string_view text) { return is(t, TokKind::Ident, text); }

// Identifiers that take a parenthesised group but never name the function.
const std::set<std::string>& non_names() {
  static const std::set<std::string> s = {"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__",
                                          "__declspec", "alignas", "decltype", "noexcept", "throw", "__align__",
                                          "sizeof", "__grid_constant__", "_Pragma", "__pragma"};
  return s;
}

std::optional<size_t> match_forward(const std::vector<Token>& t, size_t open, std::string_view o, std::string_view c) {
  int depth = 0;
  for (size_t i = open; i < t.size(); ++i) {
    if (punct(t[i], o)) ++depth;
    else if (punct(t[i], c) && --depth == 0) return i;
  }
  return std::nullopt;
}

std::optional<size_t> match_backward(const std::vector<Token>& t, size_t close, std::string_view o, std::string_view c) {
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (punct(t[i], c)) ++depth;
    else if (punct(t[i], o) && --depth == 0) return i;
  }
  return std::nullopt;
}

struct Group {
  size_t name = 0;  // index of the identifier before "(" (or before "<...>(")
  size_t open = 0, close = 0;
};

bool has_lower(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); });
}

void count_params(const std::vector<Token>& t, const Group& g, Definition& d) {
  int depth = 0, commas = 0;
  bool any = false;
  std::string text;
  for (size_t i = g.open + 1; i < g.close; ++i) {
    const Token& k = t[i];
    if (k.kind == TokKind::Directive) continue;
    if (!text.empty()) text += ' ';
    text += k.text;
    any = true;
    if (punct(k, "(") || punct(k, "<") || punct(k, "[") || punct(k, "{")) ++depth;
    else if (punct(k, ")") || punct(k, ">") || punct(k, "]") || punct(k, "}")) --depth;
    else if (punct(k, ",") && depth == 0) ++commas;
    else if (punct(k, "...")) d.variadic = true;
  }
  d.params = text;
  d.param_count = !any || text == "void" ? 0 : commas + 1;
}

// Parses the declaration that starts at the `__global__` token `g`; `stmt` is the first token
// of the statement (where `template`, `static` and `extern "C"` would be). Returns the
// definition and the index of its '{' or ';'.
std::optional<std::pair<Definition, size_t>> parse_at(const std::vector<Token>& t, size_t stmt, size_t g) {
  std::vector<Group> groups;
  size_t end = 0;
  for (size_t j = g + 1; j < t.size(); ++j) {
    if (t[j].kind == TokKind::Directive) continue;
    if (punct(t[j], "{") || punct(t[j], ";")) { end = j; break; }
    if (!punct(t[j], "(")) continue;
    auto close = match_forward(t, j, "(", ")");
    if (!close) return std::nullopt;
    size_t before = j - 1;
    if (before > g && punct(t[before], ">"))  // k<float>(...): an explicit specialization's name
      if (auto lt = match_backward(t, before, "<", ">"); lt && *lt > g + 1) before = *lt - 1;
    if (before > g && t[before].kind == TokKind::Ident) groups.push_back({before, j, *close});
    j = *close;
  }
  if (end == 0) return std::nullopt;
  std::vector<Group> named;
  for (const auto& gr : groups)
    if (!non_names().count(t[gr.name].text)) named.push_back(gr);
  if (named.empty()) return std::nullopt;
  const Group* pick = &named.back();
  for (auto it = named.rbegin(); it != named.rend(); ++it)
    if (has_lower(t[it->name].text)) { pick = &*it; break; }

  Definition d;
  d.name = t[pick->name].text;
  d.line = t[pick->name].line;
  d.definition = punct(t[end], "{");
  for (size_t k = pick->name; k >= g + 3 && punct(t[k - 1], "::") && t[k - 2].kind == TokKind::Ident; k -= 2)
    d.scopes.insert(d.scopes.begin(), t[k - 2].text);
  count_params(t, *pick, d);
  for (size_t k = stmt; k < g; ++k) {
    if (ident(t[k], "template")) d.is_template = true;
    else if (ident(t[k], "static")) d.is_static = true;
    else if (ident(t[k], "extern") && k + 1 < t.size() && is(t[k + 1], TokKind::String, "\"C\"")) d.extern_c = true;
  }
  // `__global__` written after the name's qualifiers is impossible; after `template` it is
  // the usual form. A name followed by <...> is a specialization: a template too.
  if (pick->name + 1 < t.size() && punct(t[pick->name + 1], "<")) d.is_template = true;
  return std::make_pair(std::move(d), end);
}

enum class ScopeKind { Namespace, ExternC, Other };
struct Scope {
  ScopeKind kind;
  std::string name;
};

// What the '{' at `open` opens, from the statement before it. The namespace keyword is
// looked for right before the brace (after any macro invocation without a semicolon, as in
// `SOME_MACRO(x) namespace a {`), followed only by names, '::', `inline` and [[attributes]].
Scope classify_brace(const std::vector<Token>& t, size_t stmt, size_t open) {
  for (size_t n = open; n-- > stmt;) {
    if (!ident(t[n], "namespace")) continue;
    std::string name;
    bool clean = true;
    for (size_t k = n + 1; k < open && clean; ++k) {
      if (punct(t[k], "[")) {  // [[attributes]]
        auto c = match_forward(t, k, "[", "]");
        if (!c || *c >= open) clean = false;
        else k = *c;
      } else if (t[k].kind == TokKind::Ident && t[k].text != "inline") {
        name += t[k].text;
      } else if (punct(t[k], "::")) {
        name += "::";
      } else if (!ident(t[k], "inline") && t[k].kind != TokKind::Directive) {
        clean = false;  // `namespace x = y;` never reaches a brace; anything else is not a namespace
      }
    }
    if (clean) return {ScopeKind::Namespace, name.empty() ? "(anonymous namespace)" : name};
    break;
  }
  if (open >= stmt + 2 && ident(t[open - 2], "extern") && is(t[open - 1], TokKind::String, "\"C\""))
    return {ScopeKind::ExternC, ""};
  return {ScopeKind::Other, ""};
}

}  // namespace

std::string Definition::qualified() const {
  std::string q;
  for (const auto& s : scopes) q += s + "::";
  return q + name;
}

std::set<std::string> global_macros(const std::vector<Token>& toks, const std::set<std::string>& known) {
  std::set<std::string> out;
  for (const auto& t : toks) {
    if (t.kind != TokKind::Directive || !t.text.starts_with("define")) continue;
    const std::string_view rest = std::string_view(t.text).substr(6);
    if (rest.empty() || !std::isspace(static_cast<unsigned char>(rest.front()))) continue;
    auto body = lex(rest);
    if (body.empty() || body[0].kind != TokKind::Ident) continue;
    // Function-like macros (NAME immediately followed by '(') are not markers.
    const size_t name_end = rest.find(body[0].text) + body[0].text.size();
    if (name_end < rest.size() && rest[name_end] == '(') continue;
    for (size_t i = 1; i < body.size(); ++i)
      if (ident(body[i], "__global__") || (body[i].kind == TokKind::Ident && known.count(body[i].text))) {
        out.insert(body[0].text);
        break;
      }
  }
  return out;
}

namespace {

// Brace state. Each branch of an #if starts from the state at the #if and the first
// branch's end state is kept, so unbalanced braces across branches
// (`#if A  if (x) {  #else  if (y) {  #endif`) do not shift the scopes of what follows.
struct State {
  std::vector<Scope> stack;
  std::vector<std::string> ns;  // names of the enclosing Namespace scopes
  int other_depth = 0;          // Other scopes open (inside a function or class body)
};

struct Conditional {
  State at_if;
  std::optional<State> first_branch_end;
};

void track_conditional(const Token& k, State& st, std::vector<Conditional>& conds) {
  const std::string_view d = k.text;
  if (d.starts_with("if")) {  // #if, #ifdef, #ifndef
    conds.push_back({st, std::nullopt});
  } else if ((d.starts_with("elif") || d.starts_with("else")) && !conds.empty()) {
    if (!conds.back().first_branch_end) conds.back().first_branch_end = st;
    st = conds.back().at_if;
  } else if (d.starts_with("endif") && !conds.empty()) {
    if (conds.back().first_branch_end) st = *conds.back().first_branch_end;
    conds.pop_back();
  }
}

std::vector<std::string> split_ns(const std::vector<std::string>& ns) {
  std::vector<std::string> scopes;
  for (const auto& n : ns) {
    size_t from = 0;  // "a::b" from `namespace a::b {`
    for (size_t p = n.find("::"); p != std::string::npos; p = n.find("::", from)) {
      scopes.push_back(n.substr(from, p - from));
      from = p + 2;
    }
    scopes.push_back(n.substr(from));
  }
  return scopes;
}

}  // namespace

std::vector<Definition> find_kernels(const std::vector<Token>& t, const std::set<std::string>& markers) {
  std::vector<Definition> out;
  State st;
  std::vector<Conditional> conds;
  size_t stmt = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const Token& k = t[i];
    if (k.kind == TokKind::Directive) {
      track_conditional(k, st, conds);
      continue;
    }
    if (punct(k, "{")) {
      Scope s = st.other_depth ? Scope{ScopeKind::Other, ""} : classify_brace(t, stmt, i);
      if (s.kind == ScopeKind::Other) ++st.other_depth;
      if (s.kind == ScopeKind::Namespace) st.ns.push_back(s.name);
      st.stack.push_back(s);
      stmt = i + 1;
      continue;
    }
    if (punct(k, "}")) {
      if (!st.stack.empty()) {
        if (st.stack.back().kind == ScopeKind::Other) --st.other_depth;
        if (st.stack.back().kind == ScopeKind::Namespace) st.ns.pop_back();
        st.stack.pop_back();
      }
      stmt = i + 1;
      continue;
    }
    if (punct(k, ";")) { stmt = i + 1; continue; }
    if (st.other_depth || k.kind != TokKind::Ident || (k.text != "__global__" && !markers.count(k.text))) continue;
    auto parsed = parse_at(t, stmt, i);
    if (!parsed) continue;
    auto& [d, end] = *parsed;
    std::vector<std::string> scopes = split_ns(st.ns);
    scopes.insert(scopes.end(), d.scopes.begin(), d.scopes.end());
    d.scopes = std::move(scopes);
    d.extern_c = d.extern_c || std::any_of(st.stack.begin(), st.stack.end(),
                                           [](const Scope& s) { return s.kind == ScopeKind::ExternC; });
    out.push_back(std::move(d));
    i = end - 1;  // the '{' or ';' is handled by the loop (a body opens an Other scope)
  }
  return out;
}

}  // namespace kerncap::source
