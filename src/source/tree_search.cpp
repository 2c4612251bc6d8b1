#include "source/tree_search.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <iterator>
#include <map>

#include "source/compile_db.hpp"

namespace kerncap::source {
namespace {

constexpr uint64_t kMaxFileBytes = 16ull << 20;  // generated tables and amalgamations beyond this are skipped
constexpr size_t kMaxFiles = 200000;

bool source_extension(const fs::path& p) {
  static const std::array<std::string_view, 17> exts = {".cu",  ".cuh", ".h",   ".hpp", ".hh",  ".hxx",
                                                        ".inl", ".cpp", ".cc",  ".cxx", ".c++", ".c",
                                                        ".inc", ".ipp", ".tcc", ".cup", ".hip"};
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(exts.begin(), exts.end(), e) != exts.end();
}

bool word_at(std::string_view text, size_t pos, size_t len) {
  auto id = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return (pos == 0 || !id(text[pos - 1])) && (pos + len >= text.size() || !id(text[pos + len]));
}

bool contains_word(std::string_view text, std::string_view word) {
  for (size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1))
    if (word_at(text, p, word.size())) return true;
  return false;
}

// The whole file, without keeping it: most files of a tree never mention the kernel.
bool read_whole(const fs::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// Object-like macros of a file (`#define NAME BODY`, first line only), read from the text
// without lexing it: the candidates for macros that stand for `__global__`, directly or through
// another macro (CUB_DETAIL_KERNEL_ATTRIBUTES -> CCCL_DETAIL_KERNEL_ATTRIBUTES -> __global__).
void collect_defines(std::string_view text, std::map<std::string, std::string>& out) {
  auto id = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t line = 0; line < text.size();) {
    size_t eol = text.find('\n', line);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view l = text.substr(line, eol - line);
    line = eol + 1;
    size_t i = l.find_first_not_of(" \t");
    if (i == std::string_view::npos || l[i] != '#') continue;
    i = l.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos || l.substr(i, 6) != "define") continue;
    i = l.find_first_not_of(" \t", i + 6);
    if (i == std::string_view::npos || !id(l[i])) continue;
    size_t e = i;
    while (e < l.size() && id(l[e])) ++e;
    if (e < l.size() && l[e] == '(') continue;  // function-like: not a marker
    std::string_view body = l.substr(e, 256);
    if (body.find_first_not_of(" \t\r") != std::string_view::npos) out.emplace(l.substr(i, e - i), body);
  }
}

// The macros that expand to __global__: directly, or through others (to a fixed point).
std::set<std::string> marker_closure(const std::map<std::string, std::string>& defines) {
  std::set<std::string> markers;
  for (const auto& [name, body] : defines)
    if (contains_word(body, "__global__")) markers.insert(name);
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [name, body] : defines) {
      if (markers.count(name)) continue;
      for (const auto& m : markers)
        if (contains_word(body, m)) {
          markers.insert(name);
          grew = true;
          break;
        }
    }
  }
  return markers;
}

}  // namespace

std::vector<fs::path> list_source_files(const fs::path& root_in) {
  std::vector<fs::path> out;
  const fs::path root = canonical_or_self(root_in);
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    std::error_code e2;
    if (it->is_directory(e2)) {
      if (name.starts_with(".") || name == "__pycache__" || name == "node_modules" ||
          fs::exists(p / "CMakeCache.txt", e2))
        it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(e2) || !source_extension(p) || it->file_size(e2) > kMaxFileBytes) continue;
    out.push_back(canonical_or_self(p));
    if (out.size() >= kMaxFiles) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Definition> kernels_in(const fs::path& file, const std::set<std::string>& markers, SourceCache& cache) {
  const auto* toks = cache.tokens(file);
  if (!toks) return {};
  std::set<std::string> all = markers;
  auto own = global_macros(*toks, markers);
  all.insert(own.begin(), own.end());
  return find_kernels(*toks, all);
}

TreeScan scan_tree(const fs::path& root, const std::string& name, SourceCache& cache) {
  TreeScan scan;
  scan.root = canonical_or_self(root);
  const auto files = list_source_files(scan.root);
  scan.files_listed = files.size();
  // One read per file; only files that matter are lexed and kept in the cache. Macros that
  // mean __global__ can live in any header: they are collected before definitions are parsed.
  std::vector<fs::path> mention;
  std::map<std::string, std::string> defines;  // object-like macros of the whole tree
  std::string text;
  for (const auto& f : files) {
    if (!read_whole(f, text)) continue;
    if (!scan.mentions_nvrtc && (text.find("nvrtc") != std::string::npos || text.find("cuModuleLoad") != std::string::npos))
      scan.mentions_nvrtc = true;
    if (text.find("define") != std::string::npos) collect_defines(text, defines);
    if (contains_word(text, name)) mention.push_back(f);
  }
  scan.markers = marker_closure(defines);
  for (const auto& f : mention) {
    ++scan.files_parsed;
    for (auto& d : kernels_in(f, scan.markers, cache))
      if (d.name == name) scan.named.push_back({f, std::move(d)});
    for (const auto& t : *cache.tokens(f)) {
      if (t.kind != TokKind::String) continue;
      const std::string body = string_contents(t.text);
      if (contains_word(body, name)) scan.strings.push_back({f, t.line, body.find("__global__") != std::string::npos});
    }
  }
  return scan;
}

}  // namespace kerncap::source
