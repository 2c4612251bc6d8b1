#include "source/includes.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "source/compile_db.hpp"

namespace kerncap::source {

std::vector<IncludeDirective> include_directives(const std::vector<Token>& toks) {
  std::vector<IncludeDirective> out;
  for (const auto& t : toks) {
    if (t.kind != TokKind::Directive) continue;
    std::string_view d = t.text;
    size_t skip = 0;
    if (d.starts_with("include_next")) skip = 12;
    else if (d.starts_with("include")) skip = 7;
    else if (d.starts_with("import")) skip = 6;
    else continue;
    d.remove_prefix(skip);
    while (!d.empty() && (d.front() == ' ' || d.front() == '\t')) d.remove_prefix(1);
    if (d.size() < 2) continue;
    const char close = d.front() == '"' ? '"' : d.front() == '<' ? '>' : 0;
    if (!close) continue;  // #include MACRO: cannot be followed without the preprocessor
    const size_t end = d.find(close, 1);
    if (end == std::string_view::npos) continue;
    out.push_back({t.line, close == '"', std::string(d.substr(1, end - 1))});
  }
  return out;
}

SourceCache::Entry& SourceCache::get(const fs::path& p) {
  auto [it, inserted] = files_.try_emplace(p);
  if (inserted) {
    std::ifstream in(p, std::ios::binary);
    if (in) {
      std::ostringstream ss;
      ss << in.rdbuf();
      it->second.text = ss.str();
      it->second.ok = true;
    }
  }
  return it->second;
}

const std::string* SourceCache::text(const fs::path& p) {
  Entry& e = get(p);
  return e.ok ? &e.text : nullptr;
}

const std::vector<Token>* SourceCache::tokens(const fs::path& p) {
  Entry& e = get(p);
  if (!e.ok) return nullptr;
  if (!e.tokens) e.tokens = lex(e.text);
  return &*e.tokens;
}

const std::vector<IncludeDirective>* SourceCache::includes(const fs::path& p) {
  Entry& e = get(p);
  if (!e.ok) return nullptr;
  if (!e.includes) {
    // Cheap path: only directive lines matter, but lexing keeps comments and strings right.
    e.includes = include_directives(*tokens(p));
  }
  return &*e.includes;
}

std::optional<fs::path> resolve_include(const IncludeDirective& d, const fs::path& includer, const SearchPaths& sp) {
  std::error_code ec;
  const fs::path spelled(d.spelled);
  if (spelled.is_absolute()) {
    if (fs::is_regular_file(spelled, ec)) return canonical_or_self(spelled);
    return std::nullopt;
  }
  auto try_in = [&](const fs::path& dir) -> std::optional<fs::path> {
    const fs::path p = dir / spelled;
    if (fs::is_regular_file(p, ec)) return canonical_or_self(p);
    return std::nullopt;
  };
  if (d.quoted) {
    if (auto p = try_in(includer.parent_path())) return p;
    for (const auto& dir : sp.quote)
      if (auto p = try_in(dir)) return p;
  }
  for (const auto& dir : sp.angle)
    if (auto p = try_in(dir)) return p;
  for (const auto& dir : sp.system)
    if (auto p = try_in(dir)) return p;
  return std::nullopt;
}

bool inside(const fs::path& file, const fs::path& dir) {
  auto f = file.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++f) {
    if (d->empty()) continue;  // a trailing separator
    if (f == file.end() || *f != *d) return false;
  }
  return f != file.end();
}

bool IncludeClosure::contains(const fs::path& f) const {
  return f == tu || std::find(files.begin(), files.end(), f) != files.end();
}

IncludeClosure trace_includes(const fs::path& tu_in, const SearchPaths& sp, const fs::path& tree_in,
                              SourceCache& cache) {
  IncludeClosure c;
  c.tu = canonical_or_self(tu_in);
  const fs::path tree = canonical_or_self(tree_in);
  std::set<fs::path> seen = {c.tu};
  // Depth-first in directive order, like the preprocessor (first visit decides the order).
  std::vector<std::pair<fs::path, size_t>> stack;  // file, next directive index
  auto visit = [&](const fs::path& from, const IncludeDirective& d) {
    auto to = resolve_include(d, from, sp);
    c.edges.push_back({from, d, to});
    if (to && inside(*to, tree) && seen.insert(*to).second) {
      c.files.push_back(*to);
      stack.push_back({*to, 0});
    }
  };
  auto drain = [&] {
    while (!stack.empty()) {
      auto& [file, next] = stack.back();
      const auto* dirs = cache.includes(file);
      if (!dirs || next >= dirs->size()) {
        stack.pop_back();
        continue;
      }
      const IncludeDirective d = (*dirs)[next++];
      const fs::path from = file;  // copies: visit() may grow the stack
      visit(from, d);
    }
  };
  for (const auto& f : sp.forced) {  // -include FILE comes before the TU's first line
    visit(c.tu, IncludeDirective{0, true, f.string()});
    drain();
  }
  stack.push_back({c.tu, 0});
  drain();
  return c;
}

}  // namespace kerncap::source
