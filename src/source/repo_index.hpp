#pragma once
// An index of one checked-out repository for `kerncap locate`: its C/C++/CUDA and Python
// files, which identifiers each file holds (so a lookup lexes only the few files that can
// matter), and every `@triton.jit` function. Built once per run; a PyTorch checkout takes
// seconds, a lookup milliseconds.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kerncap::source {

namespace fs = std::filesystem;

struct PyDef {
  uint32_t file = 0;  // index into RepoIndex::files
  uint32_t line = 0;
};

// identifier -> the files holding it, as an open-addressing table: the index of a PyTorch
// checkout holds a few hundred thousand words and is probed millions of times while built,
// where a node-based map spends its time in cache misses.
class WordTable {
 public:
  static uint64_t hash(std::string_view w);
  // The file list of `w` (`h` its hash), created empty when `w` is new.
  std::vector<uint32_t>& at(std::string_view w, uint64_t h);
  const std::vector<uint32_t>* find(std::string_view w) const;
  size_t size() const { return entries_.size(); }
  // Appends `other`'s lists to this table's (their file ids must all be larger).
  void append(WordTable&& other);

 private:
  struct Entry {
    uint64_t hash;
    std::string word;
    std::vector<uint32_t> files;
  };
  size_t probe(std::string_view w, uint64_t h) const;  // slot of w, or the empty slot it would take
  void grow();
  std::vector<uint32_t> slots_;  // index + 1 into entries_; 0: empty
  std::vector<Entry> entries_;
};

struct RepoIndex {
  fs::path root;                   // canonical
  std::vector<std::string> files;  // relative to root, '/'-separated, sorted
  WordTable words;  // identifier -> files holding it (sorted)
  std::unordered_map<std::string, std::vector<PyDef>> triton;    // @triton.jit function -> definitions
  size_t bytes = 0;     // text read
  size_t skipped = 0;   // unreadable, binary or too large
  double seconds = 0;   // time to build

  fs::path path(uint32_t id) const { return root / files[id]; }
  // Files holding `word` as an identifier. Words shorter than kMinWord are not indexed:
  // for those every file is returned (the caller parses and decides).
  std::vector<uint32_t> files_with(std::string_view word) const;
};

inline constexpr size_t kMinWord = 3;

// Called now and then while a large tree is read: files done, files in all.
using IndexProgress = std::function<void(size_t done, size_t total)>;

// Throws Error(Usage) when `root` is not a directory. Files are read by several threads
// (`threads` 0: one per core, at most 8). Hidden directories, __pycache__,
// node_modules, build trees (a CMakeCache.txt inside, or named build/dist/*.egg-info) are
// skipped; so are unreadable files, binary files (a NUL byte) and files over 4 MiB.
RepoIndex build_index(const fs::path& root, const IndexProgress& progress = {}, unsigned threads = 0);

// `@triton.jit` functions in Python text (also `@jit` and decorator stacks with autotune/
// heuristics, decorators over several lines): name -> 1-based line of its `def`.
std::vector<std::pair<std::string, uint32_t>> triton_functions(std::string_view text);

// Every identifier in `text` of at least kMinWord characters, each once.
std::vector<std::string_view> identifiers(std::string_view text);

// True for a path (relative, '/'-separated) that looks like a test: under tests/, test/,
// testing/, unittest(s)/, or named test_*.py, *_test.*, test-*.c*.
bool is_test_path(std::string_view rel);

}  // namespace kerncap::source
