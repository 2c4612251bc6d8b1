// libkerncap_replay.so is loaded into Python processes that run torch/triton with their own
// C++ runtime: it must export the C ABI and nothing else (no C++ symbol, no std:: typeinfo
// that could interpose on theirs), and need no libstdc++ of the process.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

std::string run(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

const std::string kLib = KERNCAP_BINARY_DIR "/lib/libkerncap_replay.so";

TEST(EngineExports, OnlyTheCAbiLeavesTheLibrary) {
  int status = -1;
  const std::string syms = run("nm -D --defined-only --format=posix '" + kLib + "' 2>/dev/null", &status);
  if (status != 0) GTEST_SKIP() << "nm cannot read " << kLib;
  std::set<std::string> names;
  size_t pos = 0;
  while (pos < syms.size()) {
    const size_t end = syms.find('\n', pos);
    const std::string line = syms.substr(pos, end - pos);
    pos = end == std::string::npos ? syms.size() : end + 1;
    if (line.empty()) continue;
    const std::string name = line.substr(0, line.find(' '));
    EXPECT_EQ(name.rfind("kc_", 0), 0u) << "exported: " << name;
    names.insert(name);
  }
  for (const char* f : {"kc_abi_version", "kc_version", "kc_last_error", "kc_free", "kc_capture_info", "kc_open",
                        "kc_close", "kc_restore", "kc_translate", "kc_params", "kc_stream", "kc_launch", "kc_time",
                        "kc_compare", "kc_abi_revision", "kc_evaluate", "kc_evaluate_image"})
    EXPECT_TRUE(names.count(f)) << f << " is not exported";
}

TEST(EngineExports, CarriesItsOwnCxxRuntime) {
  int status = -1;
  const std::string needed = run("objdump -p '" + kLib + "' 2>/dev/null | grep NEEDED", &status);
  if (needed.empty()) GTEST_SKIP() << "objdump cannot read " << kLib;
  EXPECT_EQ(needed.find("libstdc++"), std::string::npos) << needed;
  EXPECT_EQ(needed.find("libcuda"), std::string::npos) << "libcuda must be dlopen'ed, not linked: " << needed;
}

}  // namespace
