#pragma once
// #include lines and where they lead, with the search order of gcc/nvcc: a quoted include
// looks in the including file's directory, then -iquote, -I, -isystem; an angle include
// only in -I and -isystem. Only files inside the source tree are followed further: those
// are the "local includes" a reproducer mirrors.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "source/args.hpp"
#include "source/lexer.hpp"

namespace kerncap::source {

namespace fs = std::filesystem;

struct IncludeDirective {
  uint32_t line = 0;    // 0 for a forced include (-include FILE)
  bool quoted = false;  // "x" (else <x>)
  std::string spelled;  // x
};

std::vector<IncludeDirective> include_directives(const std::vector<Token>& toks);

// Reads and lexes each file once.
class SourceCache {
 public:
  const std::string* text(const fs::path& p);               // nullptr when unreadable
  const std::vector<Token>* tokens(const fs::path& p);
  const std::vector<IncludeDirective>* includes(const fs::path& p);

 private:
  struct Entry {
    bool ok = false;
    std::string text;
    std::optional<std::vector<Token>> tokens;
    std::optional<std::vector<IncludeDirective>> includes;
  };
  Entry& get(const fs::path& p);
  std::map<fs::path, Entry> files_;
};

std::optional<fs::path> resolve_include(const IncludeDirective& d, const fs::path& includer, const SearchPaths& sp);

bool inside(const fs::path& file, const fs::path& dir);  // both canonical

struct IncludeEdge {
  fs::path from;
  IncludeDirective directive;
  std::optional<fs::path> to;  // canonical; empty when not found (or a macro include)
};

struct IncludeClosure {
  fs::path tu;
  std::vector<fs::path> files;     // files inside the tree reached from the TU, first-visit order
  std::vector<IncludeEdge> edges;  // every directive of the TU and of each file in `files`
  bool contains(const fs::path& f) const;
};

// Follows includes from `tu` (forced includes first) through files inside `tree`.
IncludeClosure trace_includes(const fs::path& tu, const SearchPaths& sp, const fs::path& tree, SourceCache& cache);

}  // namespace kerncap::source
