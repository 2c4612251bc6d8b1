#include "reproducer/instance.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "format/out_layout.hpp"
#include "reproducer/render.hpp"
#include "source/compile_db.hpp"
#include "source/includes.hpp"

namespace kerncap::reproducer {
namespace {

namespace fs = std::filesystem;
using source::TokKind;
using source::Token;

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// What a demangled C++ declaration may hold. Anything else (braces, quotes, '#', ';', '/',
// control characters) means a lambda, an unnamed type or a crafted capture: the line would
// not be C++, or would be more than one declaration.
bool declaration_char(char c) {
  return ident_char(c) || std::string_view(" :<>,()*&[]-+.").find(c) != std::string_view::npos;
}

std::vector<std::string> identifiers(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    if (!ident_start(s[i]) || (i > 0 && ident_char(s[i - 1]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && ident_char(s[j])) ++j;
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool builtin_word(const std::string& w) {
  static const std::set<std::string> words = {"void", "bool", "char", "short", "int", "long", "float", "double",
                                              "signed", "unsigned", "const", "volatile", "true", "false",
                                              "decltype", "nullptr", "wchar_t", "char16_t", "char32_t", "char8_t",
                                              "__int128", "__half", "__nv_bfloat16"};
  return words.contains(w);
}

std::string directive_word(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && ident_char(text[i])) ++i;
  return text.substr(0, i);
}

// A preprocessor line's word as a conditional: it opens one (#if, #ifdef, #ifndef), closes one
// (#endif), or neither.
enum class Conditional { None, Opens, Closes };
Conditional conditional(const Token& t) {
  if (t.kind != TokKind::Directive) return Conditional::None;
  const std::string w = directive_word(t.text);
  if (w == "if" || w == "ifdef" || w == "ifndef") return Conditional::Opens;
  return w == "endif" ? Conditional::Closes : Conditional::None;
}

// The index of the ')' or '}' that closes the '(' or '{' at `open`, or toks.size().
size_t matching_close(const std::vector<Token>& toks, size_t open) {
  const std::string& o = toks[open].text;
  const char* c = o == "(" ? ")" : "}";
  int depth = 0;
  for (size_t k = open; k < toks.size(); ++k) {
    if (toks[k].text == o) ++depth;
    else if (toks[k].text == c && --depth == 0) return k;
  }
  return toks.size();
}

// Types (struct, class, union, enum, using, typedef names) the unit declares from token
// `from` on: a template argument naming one of them cannot be instantiated from the
// leading includes alone.
std::set<std::string> declared_types(const std::vector<Token>& toks, size_t from) {
  std::set<std::string> out;
  auto is = [&](size_t i, std::string_view text) { return i < toks.size() && toks[i].text == text; };
  for (size_t i = from; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.kind != TokKind::Ident) continue;
    const bool template_parameter = i > 0 && (toks[i - 1].text == "<" || toks[i - 1].text == ",");
    if ((t.text == "struct" || t.text == "class" || t.text == "union" || t.text == "enum") && !template_parameter) {
      size_t k = i + 1;
      if (t.text == "enum" && (is(k, "class") || is(k, "struct"))) ++k;
      // Attributes and alignment macros before the name: __align__(16), alignas(8).
      while (k + 1 < toks.size() && toks[k].kind == TokKind::Ident && is(k + 1, "(")) {
        int depth = 0;
        for (++k; k < toks.size(); ++k) {
          if (toks[k].text == "(") ++depth;
          else if (toks[k].text == ")" && --depth == 0) break;
        }
        ++k;
      }
      if (k < toks.size() && toks[k].kind == TokKind::Ident) out.insert(toks[k].text);
    } else if (t.text == "using" && i + 2 < toks.size() && toks[i + 1].kind == TokKind::Ident && is(i + 2, "=")) {
      out.insert(toks[i + 1].text);
    } else if (t.text == "typedef") {
      for (size_t k = i + 1; k < toks.size() && toks[k].text != ";"; ++k)
        if (toks[k].kind == TokKind::Ident && (is(k + 1, ";") || is(k + 1, ")")) && !builtin_word(toks[k].text))
          out.insert(toks[k].text);
    }
  }
  return out;
}

// Files inside the tree that the unit's directives up to `last_line` reach (forced includes
// from the command line count: the instance is compiled with the same flags).
std::set<fs::path> reached_by_prelude(const source::IncludeClosure& c, const fs::path& unit, uint32_t last_line) {
  std::set<fs::path> reached;
  std::vector<fs::path> todo;
  for (const auto& e : c.edges)
    if (e.to && source::canonical_or_self(e.from) == unit && e.directive.line <= last_line && reached.insert(*e.to).second)
      todo.push_back(*e.to);
  while (!todo.empty()) {
    const fs::path f = todo.back();
    todo.pop_back();
    for (const auto& e : c.edges)
      if (e.to && e.from == f && reached.insert(*e.to).second) todo.push_back(*e.to);
  }
  return reached;
}

// The unit's lines; a last line without '\n' counts.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// #if blocks still open after the tokens before `end`.
int open_conditionals(const std::vector<Token>& toks, size_t end) {
  int depth = 0;
  for (size_t i = 0; i < end && i < toks.size(); ++i) {
    const Conditional c = conditional(toks[i]);
    if (c == Conditional::Opens) ++depth;
    else if (c == Conditional::Closes && depth > 0) --depth;
  }
  return depth;
}

// A kernel defined in the unit: kernel_variant.cu with the lines after its definition
// guarded, and kernel_instance.cu that includes it up to there.
void plan_in_unit(InstanceUnit& u, const source::Result& f, const std::string& unit_text, const std::string& edit_file) {
  const fs::path unit = source::canonical_or_self(f.tu);
  const std::string name = unit.filename().string();
  const auto toks = source::lex(unit_text);
  const DefinitionEnd end = definition_end(toks, f.name.base, f.line);
  if (end.line == 0) {
    u.reason = fmt::format("the kernel is defined in the unit itself ({}), and its definition could not be found "
                           "there again to compile it alone",
                           name);
    return;
  }
  if (end.code_after_on_line) {
    u.reason = fmt::format("the kernel is defined in the unit itself ({}), and code follows its closing brace on "
                           "the same line: the unit cannot be cut after it",
                           name);
    return;
  }
  size_t after = 0;  // the first token after the definition's last line
  while (after < toks.size() && toks[after].line <= end.line) ++after;
  // Open #if blocks (an include guard) may stay open if they close at the unit's end: the
  // guard nests inside them.
  const uint32_t guard_end = guard_end_line(toks, after, open_conditionals(toks, after));
  if (guard_end == UINT32_MAX) {
    u.reason = fmt::format("the kernel is defined in the unit itself ({}) inside an #if block that does not close "
                           "at the unit's end: the unit cannot be cut after it",
                           name);
    return;
  }
  if (const auto later_defs = defined_after_use(toks, after); !later_defs.empty()) {
    u.reason = fmt::format("{} uses {} before the kernel's end and defines it after: cut after the kernel, the "
                           "unit would lack its body",
                           name, later_defs.front());
    return;
  }
  // A type its template arguments name must be declared before the cut.
  const auto later = declared_types(toks, after);
  std::vector<Token> before(toks.begin(), toks.begin() + static_cast<std::ptrdiff_t>(after));
  const auto earlier = declared_types(before, 0);
  for (const auto& a : f.name.template_args)
    for (const auto& id : identifiers(a))
      if (later.contains(id) && !earlier.contains(id)) {
        u.reason = fmt::format("its template argument {} names {}, which {} declares after the kernel", a, id, name);
        return;
      }
  const std::vector<std::string> lines = split_lines(unit_text);
  if (end.line > lines.size()) return;
  std::string variant;
  for (uint32_t i = 0; i < end.line; ++i) variant += lines[i] + "\n";
  variant += fmt::format("#ifndef {}  // kerncap: what follows the captured kernel is left out of make recompile "
                         "(kernel_instance.cu)\n",
                         kInstanceOnly);
  // The guard ends before the #endif lines that close the blocks open around the kernel, or
  // at the unit's end.
  const size_t tail = guard_end == 0 ? lines.size() : std::min<size_t>(guard_end - 1, lines.size());
  for (size_t i = end.line; i < tail; ++i) variant += lines[i] + "\n";
  if (end.open_blocks > 0) {
    variant += "#else  // kerncap: closes the namespaces still open after the captured kernel\n";
    for (int i = 0; i < end.open_blocks; ++i) variant += "}\n";
  }
  variant += fmt::format("#endif  // {}\n", kInstanceOnly);
  for (size_t i = tail; i < lines.size(); ++i) variant += lines[i] + "\n";
  u.variant_text = std::move(variant);
  u.prelude_lines = end.line;
  const std::string instantiate =
      u.instantiation.empty()
          ? std::string("// The kernel is not a template: its definition above is what is compiled.\n")
          : "// The captured instantiation: an explicit instantiation names the parameter types, so it\n"
            "// picks the right template among overloads and adds no symbol of its own.\n" +
                u.instantiation + "\n";
  u.text = fmt::format(
      "// kernel_instance.cu, written by `kerncap extract`. `make recompile` compiles this file: it\n"
      "// builds the captured kernel\n"
      "//   {}\n"
      "// from kernel_variant.cu up to the kernel's definition (what precedes it is compiled too),\n"
      "// without the code after it (the host code and the unit's other kernels; the whole unit:\n"
      "// make -B recompile WHOLE_UNIT=1). Edit the kernel in {}.\n"
      "#define {} 1\n"
      "{}\n"
      "{}",
      make_comment(f.name.demangled), make_comment(edit_file), kInstanceOnly, unit_include_line(), instantiate);
}

}  // namespace

std::string unit_include_line() { return fmt::format("#include \"{}\"", format::out::kKernelVariantCu); }

bool InstanceUnit::includes_unit() const { return text.find(unit_include_line()) != std::string::npos; }

DefinitionEnd definition_end(const std::vector<Token>& toks, const std::string& base, uint32_t line) {
  DefinitionEnd out;
  int depth = 0;  // braces open before token i
  for (size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.kind == TokKind::Punct && t.text == "{") ++depth;
    if (t.kind == TokKind::Punct && t.text == "}") --depth;
    if (t.kind != TokKind::Ident || t.text != base || t.line < line || i + 1 >= toks.size() || toks[i + 1].text != "(")
      continue;
    // The parameter list, then the body (or a ';': a declaration or a call, not this).
    size_t k = matching_close(toks, i + 1);
    while (k < toks.size() && toks[k].text != "{" && toks[k].text != ";") ++k;
    if (k >= toks.size() || toks[k].text == ";") continue;
    const size_t close = matching_close(toks, k);
    if (close >= toks.size()) return out;
    out.line = toks[close].line;
    out.open_blocks = depth;
    out.code_after_on_line = close + 1 < toks.size() && toks[close + 1].line == toks[close].line;
    return out;
  }
  return out;
}

// Functions called or declared (`name(...);`) before token `cut` and defined (`name(...) {`)
// from it on: the unit up to the cut would call a function whose body was left out (nvcc
// without -rdc refuses that). Calls count too: conservative, a false hit only costs the
// whole-unit compile.
std::vector<std::string> defined_after_use(const std::vector<Token>& toks, size_t cut) {
  // Whether the '{' at `i` opens a namespace or a linkage block (`namespace a::b {`, `extern "C" {`).
  auto opens_namespace = [&](size_t i) {
    for (size_t back = 1; back <= 6 && back <= i; ++back) {
      const Token& t = toks[i - back];
      if (t.text == "namespace" || (t.text == "extern" && back == 2 && toks[i - 1].kind == TokKind::String)) return true;
      if (t.kind != TokKind::Ident && t.text != "::") return false;
    }
    return false;
  };
  std::set<std::string> used;
  for (size_t i = 0; i + 1 < cut; ++i)
    if (toks[i].kind == TokKind::Ident && toks[i + 1].text == "(") used.insert(toks[i].text);
  std::vector<std::string> out;
  std::vector<bool> blocks;  // open braces: true for a namespace or linkage block
  for (size_t i = 0; i + 1 < toks.size(); ++i) {
    if (toks[i].text == "{") blocks.push_back(opens_namespace(i));
    else if (toks[i].text == "}" && !blocks.empty()) blocks.pop_back();
    // A definition at namespace scope: every open brace is a namespace's.
    if (i < cut || toks[i].kind != TokKind::Ident || toks[i + 1].text != "(" || !used.contains(toks[i].text) ||
        std::find(blocks.begin(), blocks.end(), false) != blocks.end())
      continue;
    size_t k = std::min(matching_close(toks, i + 1) + 1, toks.size());
    while (k < toks.size() && toks[k].kind == TokKind::Ident && (toks[k].text == "const" || toks[k].text == "noexcept"))
      ++k;
    if (k < toks.size() && toks[k].text == "{" && std::find(out.begin(), out.end(), toks[i].text) == out.end())
      out.push_back(toks[i].text);
  }
  return out;
}

// Where the guard after the kernel must end when `open` #if blocks are open at token `cut`
// (a .cu file wrapped in an include guard): the line of the #endif that closes the first of
// them, when every one of them closes there, at the end of the unit, with nothing but their
// #endif lines after it (so the guard nests inside them). 0: the unit's own end (nothing
// open), or UINT32_MAX when they close elsewhere (an #else of theirs, or code after them).
uint32_t guard_end_line(const std::vector<Token>& toks, size_t cut, int open) {
  if (open == 0) return 0;
  int depth = open;
  for (size_t i = cut; i < toks.size(); ++i) {
    if (toks[i].kind != TokKind::Directive) continue;
    const Conditional c = conditional(toks[i]);
    const std::string w = directive_word(toks[i].text);
    if (c == Conditional::Opens) ++depth;
    else if ((w == "else" || w == "elif" || w == "elifdef" || w == "elifndef") && depth <= open) return UINT32_MAX;
    else if (c == Conditional::Closes && --depth < open) {
      // The rest must be the remaining #endif lines alone.
      for (size_t k = i + 1; k < toks.size(); ++k)
        if (conditional(toks[k]) != Conditional::Closes) return UINT32_MAX;
      return toks.size() - i == static_cast<size_t>(open) ? toks[i].line : UINT32_MAX;
    }
  }
  return UINT32_MAX;
}

std::string explicit_instantiation(const names::KernelName& n, std::string& why) {
  if (!n.cxx || !n.is_template) {
    why = fmt::format("{} is not a template: there is no single instantiation to compile alone",
                      n.base.empty() ? n.mangled : n.base);
    return "";
  }
  const std::string scope = n.qualified();
  std::string all = scope;
  for (const auto& s : n.template_args) all += " " + s;
  for (const auto& s : n.params) all += " " + s;
  if (std::find(n.scopes.begin(), n.scopes.end(), names::kAnonymousNamespace) != n.scopes.end()) {
    why = "the kernel is in an anonymous namespace: only its own unit can name it";
    return "";
  }
  // How demanglers spell what has no name outside its unit ({lambda(int)#1}, 'unnamed').
  // The character check below refuses these too; this names the reason.
  static constexpr std::pair<std::string_view, std::string_view> kUnnameable[] = {
      {"{lambda", "a lambda"},
      {"'lambda", "a lambda"},
      {"{unnamed", "an unnamed type"},
      {"'unnamed", "an unnamed type"},
      {"anonymous namespace", "a type from an anonymous namespace"},
      {"__nv_dl_wrapper_t", "an extended lambda"},
      {"__nv_hdl_wrapper_t", "an extended lambda"},
      {"[abi:", "an ABI-tagged name"}};
  for (const auto& [needle, what] : kUnnameable) {
    if (all.find(needle) != std::string::npos) {
      why = fmt::format("its template arguments hold {}, which cannot be named outside its unit", what);
      return "";
    }
  }
  if (!std::all_of(all.begin(), all.end(), declaration_char)) {
    why = "its demangled name holds characters that cannot be spelled in a C++ declaration";
    return "";
  }
  std::string args, params;
  for (const auto& a : n.template_args) args += (args.empty() ? "" : ", ") + a;
  for (const auto& p : n.params) params += (params.empty() ? "" : ", ") + p;
  // A closing '>' right after an argument that ends in '>' is fine since C++11.
  return fmt::format("template __global__ void {}<{}>({});", scope, args, params);
}

uint32_t prelude_end(const std::vector<Token>& toks) {
  int depth = 0;
  uint32_t open_at = 0;  // the line of the outermost #if still open
  for (const Token& t : toks) {
    if (t.kind != TokKind::Directive) {
      const uint32_t cut = depth > 0 ? open_at : t.line;
      return cut > 0 ? cut - 1 : 0;
    }
    const Conditional c = conditional(t);
    if (c == Conditional::Opens) {
      if (depth++ == 0) open_at = t.line;
    } else if (c == Conditional::Closes && depth > 0) {
      --depth;
    }
  }
  // Only preprocessor lines: all of it, unless an #if never closes (then up to it).
  return depth > 0 ? open_at - 1 : UINT32_MAX;
}

InstanceUnit plan_instance(const source::Result& f, const std::string& unit_text, const std::string& edit_file) {
  InstanceUnit u;
  const fs::path unit = source::canonical_or_self(f.tu);
  const fs::path def = source::canonical_or_self(f.definition);
  u.instantiation = explicit_instantiation(f.name, u.reason);
  // A kernel that is not a template, defined in the unit: its definition compiles it.
  const bool plain = !f.name.is_template && !f.name.base.empty();
  if (def == unit && (!u.instantiation.empty() || plain)) {
    u.reason.clear();
    plan_in_unit(u, f, unit_text, edit_file);
    return u;
  }
  if (u.instantiation.empty()) return u;
  const auto toks = source::lex(unit_text);
  const std::vector<std::string> lines = split_lines(unit_text);
  const uint32_t end = std::min<uint32_t>(prelude_end(toks), static_cast<uint32_t>(lines.size()));
  if (!reached_by_prelude(f.includes, unit, end).contains(def)) {
    u.reason = fmt::format("the leading #include lines of {} do not reach {} (it is included after code of the "
                           "unit's own, or through a macro)",
                           unit.filename().string(), def.filename().string());
    return u;
  }
  size_t body = 0;
  while (body < toks.size() && toks[body].line <= end) ++body;
  const auto declared = declared_types(toks, body);
  for (const auto& s : f.name.template_args)
    for (const auto& id : identifiers(s))
      if (declared.contains(id)) {
        u.reason = fmt::format("its template argument {} names {}, which {} declares after its leading includes",
                               s, id, unit.filename().string());
        return u;
      }
  std::string prelude;
  for (uint32_t i = 0; i < end; ++i) prelude += lines[i] + "\n";
  // The prelude must end outside any comment or literal, or the instantiation would vanish.
  const auto check = source::lex(prelude + "\nkerncap_probe");
  if (check.empty() || check.back().text != "kerncap_probe") {
    u.reason = fmt::format("the leading lines of {} end inside a comment: they cannot be separated from its code",
                           unit.filename().string());
    return u;
  }
  u.prelude_lines = end;
  // An explicit instantiation rather than `void* keep = (void*)&ns::kernel<...>;`: the
  // parameter list (the instantiated function's exact types, as the mangled name records
  // them) picks the right template among overloads, and it adds no symbol or unused
  // variable that the unit's warning flags (-Werror) could reject.
  u.text = fmt::format(
      "// kernel_instance.cu, written by `kerncap extract`. `make recompile` compiles this file: it\n"
      "// builds only the captured instantiation\n"
      "//   {}\n"
      "// and none of the other kernels of kernel_variant.cu (the whole unit: make -B recompile WHOLE_UNIT=1).\n"
      "// Edit the kernel in {}.\n"
      "// Below are the first {} line(s) of kernel_variant.cu as extract wrote them (its macros and\n"
      "// includes): change them here too if you change them there.\n"
      "{}\n"
      "// The captured instantiation: an explicit instantiation names the parameter types, so it\n"
      "// picks the right template among overloads and adds no symbol of its own.\n"
      "{}\n",
      make_comment(f.name.demangled), make_comment(edit_file), end, prelude, u.instantiation);
  return u;
}

}  // namespace kerncap::reproducer
