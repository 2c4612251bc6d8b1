// The index behind `kerncap locate`: its word table (open addressing, grown and merged
// across the threads that read the tree) and how files are read (binary ones skipped).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "source/repo_index.hpp"

namespace kerncap::source {
namespace {

namespace fs = std::filesystem;

TEST(RepoIndexWords, GrowsFindsAndAppendsInOrder) {
  WordTable a, b;
  // Past the first table size, so that it grows several times.
  for (uint32_t i = 0; i < 200000; ++i) {
    const std::string w = "w" + std::to_string(i);
    a.at(w, WordTable::hash(w)).push_back(i % 7);
  }
  EXPECT_EQ(a.size(), 200000u);
  ASSERT_NE(a.find("w123456"), nullptr);
  EXPECT_EQ(*a.find("w123456"), std::vector<uint32_t>{123456 % 7});
  EXPECT_EQ(a.find("w200000"), nullptr);
  EXPECT_EQ(a.find(""), nullptr);
  // A later slice's files come after: lists stay sorted, new words are added.
  b.at("w5", WordTable::hash("w5")).push_back(9);
  b.at("fresh", WordTable::hash("fresh")).push_back(8);
  a.append(std::move(b));
  EXPECT_EQ(*a.find("w5"), (std::vector<uint32_t>{5, 9}));
  EXPECT_EQ(*a.find("fresh"), std::vector<uint32_t>{8});
  EXPECT_EQ(WordTable().find("w5"), nullptr);
}

TEST(RepoIndexWords, ReadsTextSkipsBinaryAndSplitsAcrossThreads) {
  const fs::path dir = fs::temp_directory_path() / ("kerncap_repo_index_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  auto write = [&](const std::string& rel, const std::string& text) {
    std::ofstream(dir / rel, std::ios::binary) << text;
  };
  write("src/empty.cu", "");
  write("src/binary.cu", std::string("__global__ void hidden_kernel() {}\0\1\2", 38));
  write("src/late_nul.cu", "__global__ void late_kernel() {}\n" + std::string(9000, ' ') + std::string(1, '\0'));
  for (int i = 0; i < 300; ++i)  // enough files for several reading threads
    write("src/f" + std::to_string(i) + ".cu", "void common_word_" + std::to_string(i % 3) + "() {}\n");
  const RepoIndex one = build_index(dir, {}, 1);
  const RepoIndex four = build_index(dir, {}, 4);
  for (const RepoIndex* idx : {&one, &four}) {
    EXPECT_EQ(idx->files.size(), 303u);
    EXPECT_EQ(idx->skipped, 1u);                            // binary.cu: a NUL in its first 8 KiB
    EXPECT_TRUE(idx->files_with("hidden_kernel").empty());
    EXPECT_EQ(idx->files_with("late_kernel").size(), 1u);   // a NUL further on is no binary
    const auto ids = idx->files_with("common_word_1");
    EXPECT_EQ(ids.size(), 100u);
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  }
  EXPECT_EQ(one.files_with("common_word_2"), four.files_with("common_word_2"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kerncap::source
