#include "source/repo_index.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <regex>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// Identifier characters by table: std::isalnum consults the locale on every call.
struct CharClass {
  std::array<uint8_t, 256> t{};  // 1: may start an identifier, 2: may continue one
  constexpr CharClass() {
    for (int c = 0; c < 256; ++c) {
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
      t[c] = static_cast<uint8_t>((alpha ? 1 : 0) | (alpha || (c >= '0' && c <= '9') ? 2 : 0));
    }
  }
};
constexpr CharClass kChars;
bool ident_start(char c) { return kChars.t[static_cast<unsigned char>(c)] & 1; }
bool ident_char(char c) { return kChars.t[static_cast<unsigned char>(c)] & 2; }

// The whole file in one read (a stream iterator costs several times more), into a buffer
// reused across files. False for an unreadable file or a binary one (a NUL in its first 8 KiB).
bool read_text(const fs::path& p, std::string& out) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return false;
  }
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);  // a file that shrank while read
  return std::memchr(out.data(), '\0', std::min<size_t>(out.size(), 8192)) == nullptr;
}

// The distinct identifiers of one file: an open-addressing set of views into its text,
// emptied for the next file by clearing only the slots used (most files hold a few hundred
// distinct words, the whole index hundreds of thousands).
class FileWords {
 public:
  // Returns false when `w` (hash `h`) was seen already in this file.
  bool insert(std::string_view w, uint64_t h) {
    if ((used_.size() + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      if (slots_[i].data() == nullptr) {
        slots_[i] = w;
        used_.push_back(i);
        return true;
      }
      if (slots_[i] == w) return false;
    }
  }
  void clear() {
    for (size_t i : used_) slots_[i] = {};
    used_.clear();
  }

 private:
  void grow() {
    std::vector<std::string_view> old;
    for (size_t i : used_) old.push_back(slots_[i]);
    slots_.assign(std::max<size_t>(1024, slots_.size() * 2), std::string_view{});
    used_.clear();
    for (auto w : old) insert(w, WordTable::hash(w));
  }
  std::vector<std::string_view> slots_;
  std::vector<size_t> used_;
};

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

uint64_t WordTable::hash(std::string_view w) {  // FNV-1a: short keys, no setup
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : w) h = (h ^ ch) * 1099511628211ull;
  return h ^ (h >> 29);
}

size_t WordTable::probe(std::string_view w, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const uint32_t s = slots_[i];
    if (s == 0) return i;
    const Entry& e = entries_[s - 1];
    if (e.hash == h && e.word == w) return i;
  }
}

void WordTable::grow() {
  slots_.assign(std::max<size_t>(1 << 16, slots_.size() * 2), 0);
  const size_t mask = slots_.size() - 1;
  for (uint32_t k = 0; k < entries_.size(); ++k) {
    size_t i = entries_[k].hash & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = k + 1;
  }
}

std::vector<uint32_t>& WordTable::at(std::string_view w, uint64_t h) {
  if ((entries_.size() + 1) * 2 > slots_.size()) grow();
  const size_t i = probe(w, h);
  if (slots_[i] == 0) {
    entries_.push_back({h, std::string(w), {}});
    slots_[i] = static_cast<uint32_t>(entries_.size());
  }
  return entries_[slots_[i] - 1].files;
}

const std::vector<uint32_t>* WordTable::find(std::string_view w) const {
  if (slots_.empty()) return nullptr;
  const size_t i = probe(w, hash(w));
  return slots_[i] == 0 ? nullptr : &entries_[slots_[i] - 1].files;
}

void WordTable::append(WordTable&& other) {
  for (auto& e : other.entries_) {
    auto& files = at(e.word, e.hash);
    if (files.empty()) files = std::move(e.files);
    else files.insert(files.end(), e.files.begin(), e.files.end());
  }
  other = WordTable();
}

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
  const auto* holders = words.find(word);
  return holders ? *holders : std::vector<uint32_t>{};
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
    WordTable words;
    std::vector<std::pair<std::string, PyDef>> triton;
    size_t bytes = 0, skipped = 0;
  };
  std::vector<Slice> slices(threads);
  std::atomic<size_t> done{0};
  auto work = [&](unsigned t) {
    Slice& sl = slices[t];
    std::string text;
    FileWords seen;
    const size_t from = n * t / threads, to = n * (t + 1) / threads;
    for (size_t i = from; i < to; ++i, ++done) {
      const auto id = static_cast<uint32_t>(i);
      if (!read_text(idx.path(id), text)) {
        ++sl.skipped;
        continue;
      }
      sl.bytes += text.size();
      // Each word once per file: a small per-file set first, the large map once per word.
      seen.clear();
      each_identifier(text, [&](std::string_view w) {
        const uint64_t h = WordTable::hash(w);
        if (seen.insert(w, h)) sl.words.at(w, h).push_back(id);
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
  // The first slice's map becomes the index; the others' lists are appended (their file ids
  // are larger, so each list stays sorted).
  idx.words = std::move(slices[0].words);
  for (size_t t = 0; t < slices.size(); ++t) {
    auto& sl = slices[t];
    idx.bytes += sl.bytes;
    idx.skipped += sl.skipped;
    if (t > 0) idx.words.append(std::move(sl.words));
    for (auto& [name, d] : sl.triton) idx.triton[name].push_back(d);
  }
  if (progress && reported) progress(n, n);
  idx.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return idx;
}

}  // namespace kerncap::source
