#pragma once
// Shared by the source_* and reproducer_* tests: a scratch directory and a copy of the
// fixture project tests/fixtures/source/app with its compile_commands.json filled in.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kerncap::testing {

namespace fs = std::filesystem;

inline fs::path fixtures() { return fs::path(KERNCAP_FIXTURES) / "source"; }

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

class Scratch {
 public:
  Scratch() {
    static std::atomic<int> counter{0};
    root_ = fs::temp_directory_path() /
            ("kerncap-source-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(root_);
    fs::create_directories(root_);
    root_ = fs::canonical(root_);
  }
  ~Scratch() { fs::remove_all(root_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& root() const { return root_; }

  // Copies app/ and outside/ here; returns the app root (compile_commands.json written).
  fs::path install_app(const std::string& nvcc = "/usr/local/cuda/bin/nvcc") {
    fs::copy(fixtures() / "app", root_ / "app", fs::copy_options::recursive);
    fs::copy(fixtures() / "outside", root_ / "outside", fs::copy_options::recursive);
    const fs::path app = root_ / "app";
    std::string db = slurp(app / "compile_commands.json.in");
    db = replace_all(replace_all(db, "@ROOT@", app.string()), "@NVCC@", nvcc);
    spit(app / "build" / "compile_commands.json", db);
    fs::create_directories(app / "build" / "src");
    return app;
  }

 private:
  fs::path root_;
};

}  // namespace kerncap::testing
