#include "source/repo_index.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "common/error.hpp"
#include "source/compile_db.hpp"

namespace kerncap::source {
namespace {

constexpr uint64_t kMaxIndexedBytes = 4ull << 20;  // amalgamations and generated tables beyond this
constexpr size_t kMaxIndexedFiles = 400000;

bool indexed_extension(const fs::path& p) {
  static const std::array<std::string_view, 18> exts = {".cu",  ".cuh", ".h",   ".hpp", ".hh",  ".hxx",
                                                        ".inl", ".cpp", ".cc",  ".cxx", ".c++", ".c",
                                                        ".inc", ".ipp", ".tcc", ".hip", ".py",  ".pyi"};
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(exts.begin(), exts.end(), e) != exts.end();
}

bool skipped_dir(const fs::path& p, std::error_code& ec) {
  const std::string name = p.filename().string();
  return name.starts_with(".") || name == "__pycache__" || name == "node_modules" || name == "build" ||
         name == "dist" || name.ends_with(".egg-info") || fs::exists(p / "CMakeCache.txt", ec);
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool read_text(const fs::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return false;
  // A NUL near the start: a binary file with a source-like name.
  const size_t nul = out.find('\0');
  return nul == std::string::npos || nul >= 8192;
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

template <typename F>
void each_identifier(std::string_view text, F&& f) {
  for (size_t i = 0; i < text.size();) {
    if (!ident_start(text[i]) || (i > 0 && ident_char(text[i - 1]))) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < text.size() && ident_char(text[j])) ++j;
    if (j - i >= kMinWord) f(text.substr(i, j - i));
    i = j;
  }
}

}  // namespace

std::vector<std::string_view> identifiers(std::string_view text) {
  std::vector<std::string_view> out;
  each_identifier(text, [&](std::string_view w) { out.push_back(w); });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::pair<std::string, uint32_t>> triton_functions(std::string_view text) {
  std::vector<std::pair<std::string, uint32_t>> out;
  bool jit = false;        // a @triton.jit decorator is pending
  bool in_decorator = false;
  int depth = 0;           // open parentheses of a decorator spanning lines
  uint32_t line_no = 0;
  static const std::regex jit_re(R"(^@\s*(triton\s*\.\s*)?jit\b)");
  static const std::regex def_re(R"(^(async\s+)?def\s+([A-Za-z_]\w*)\s*\()");
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string_view line = trim_left(raw);
    if (in_decorator) {
      for (char c : line) depth += c == '(' || c == '[' ? 1 : c == ')' || c == ']' ? -1 : 0;
      if (depth <= 0) in_decorator = false;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    if (line.front() == '@') {
      const std::string l(line);
      if (std::regex_search(l, jit_re)) jit = true;
      depth = 0;
      for (char c : line) depth += c == '(' || c == '[' ? 1 : c == ')' || c == ']' ? -1 : 0;
      in_decorator = depth > 0;
      continue;
    }
    if (jit) {
      std::cmatch m;
      const std::string l(line);
      if (std::regex_search(l.c_str(), m, def_re)) out.emplace_back(m[2].str(), line_no);
    }
    jit = false;
    if (pos > text.size()) break;
  }
  return out;
}

bool is_test_path(std::string_view rel) {
  static const std::regex re(
      R"((^|/)(tests?|testing|unittests?|unit_tests?)/|(^|/)test_[^/]*\.py$|_test\.[A-Za-z+]+$|(^|/)test-[^/]*\.(c|cc|cpp|cu)$)");
  return std::regex_search(rel.begin(), rel.end(), re);
}

std::vector<uint32_t> RepoIndex::files_with(std::string_view word) const {
  if (word.size() < kMinWord) {
    std::vector<uint32_t> all(files.size());
    for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }
  auto it = words.find(word);
  return it == words.end() ? std::vector<uint32_t>{} : it->second;
}

RepoIndex build_index(const fs::path& root_in, const IndexProgress& progress, unsigned threads) {
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  if (!fs::is_directory(root_in, ec))
    usage_error(fmt::format("--source-repo {}: not a directory", root_in.string()));
  RepoIndex idx;
  idx.root = canonical_or_self(root_in);

  // List first (sorted, so ids and answers do not depend on directory order), then read.
  fs::recursive_directory_iterator it(idx.root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_directory(e2)) {
      if (skipped_dir(it->path(), e2)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(e2) || !indexed_extension(it->path())) continue;
    if (it->file_size(e2) > kMaxIndexedBytes) {
      ++idx.skipped;
      continue;
    }
    idx.files.push_back(it->path().lexically_relative(idx.root).generic_string());
    if (idx.files.size() >= kMaxIndexedFiles) break;
  }
  std::sort(idx.files.begin(), idx.files.end());

  // Contiguous slices of the sorted list, one per thread; merged in slice order, so every
  // word's file list stays sorted. The calling thread reports progress.
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  const size_t n = idx.files.size();
  threads = static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(threads, n / 64 + 1)));
  struct Slice {
    std::unordered_map<std::string, std::vector<uint32_t>, WordHash, std::equal_to<>> words;
    std::vector<std::pair<std::string, PyDef>> triton;
    size_t bytes = 0, skipped = 0;
  };
  std::vector<Slice> slices(threads);
  std::atomic<size_t> done{0};
  auto work = [&](unsigned t) {
    Slice& sl = slices[t];
    std::string text;
    const size_t from = n * t / threads, to = n * (t + 1) / threads;
    for (size_t i = from; i < to; ++i, ++done) {
      const auto id = static_cast<uint32_t>(i);
      if (!read_text(idx.path(id), text)) {
        ++sl.skipped;
        continue;
      }
      sl.bytes += text.size();
      // Each word once per file: the file being read is the only one that can be last.
      each_identifier(text, [&](std::string_view w) {
        auto f = sl.words.find(w);
        if (f == sl.words.end()) f = sl.words.emplace(std::string(w), std::vector<uint32_t>{}).first;
        if (f->second.empty() || f->second.back() != id) f->second.push_back(id);
      });
      if (idx.files[id].ends_with(".py") && text.find("jit") != std::string::npos)
        for (auto& [name, line] : triton_functions(text)) sl.triton.emplace_back(name, PyDef{id, line});
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
  std::thread first(work, 0u);
  bool reported = false;  // small trees finish before the first progress line
  while (progress && done.load() < n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(500) && done.load() < n) {
      progress(done.load(), n);
      reported = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(480));
    }
  }
  first.join();
  for (auto& th : pool) th.join();
  for (auto& sl : slices) {
    idx.bytes += sl.bytes;
    idx.skipped += sl.skipped;
    for (auto& [w, ids] : sl.words) {
      auto& all = idx.words[w];
      all.insert(all.end(), ids.begin(), ids.end());
    }
    for (auto& [name, d] : sl.triton) idx.triton[name].push_back(d);
  }
  if (progress && reported) progress(n, n);
  idx.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return idx;
}

}  // namespace kerncap::source
