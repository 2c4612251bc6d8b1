// `kerncap info` on damaged or crafted captures, through the built binary: exit 2 with the
// reader's message, never 70 ("internal error"), never a hang; `--verify` checks the BEFORE
// files' hashes.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <xxhash.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "format/capture_dir.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

using json = nlohmann::json;

struct Result {
  int code = -1;
  std::string out;
  double seconds = 0;
};

Result kerncap(const std::string& args) {
  // timeout(1) turns a hang into exit 124 instead of a stuck test.
  const std::string cmd = "timeout 10 " + std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap " + args + " 2>&1";
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

class InfoCliTest : public kerncap::testing::SmallCaptureDir {
 protected:
  void expect_input_error(const std::string& args, const std::string& fragment) const {
    const Result r = kerncap(args);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(fragment), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
    EXPECT_LT(r.seconds, 5.0) << r.out;
  }
};

TEST_F(InfoCliTest, GoodCaptureShowsTheCheckedImage) {
  const Result r = kerncap("info " + out_.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("hash checked"), std::string::npos) << r.out;
  const Result v = kerncap("info --verify " + out_.string());
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("every BEFORE file matches"), std::string::npos) << v.out;
}

TEST_F(InfoCliTest, VerifyRefusesAChangedBeforeFile) {
  json j = original_;
  const std::vector<uint8_t> r0(256, 1);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(XXH64(r0.data(), r0.size(), 0)));
  j["regions"][0]["xxh64"] = hex;
  put_text(j.dump());
  EXPECT_EQ(kerncap("info --verify " + out_.string()).code, 0);
  std::fstream f(dir_ / "mem/0.bin", std::ios::in | std::ios::out | std::ios::binary);
  f.put('\x55');
  f.close();
  expect_input_error("info " + out_.string() + " --verify", "does not match the hash");
  EXPECT_EQ(kerncap("info " + out_.string()).code, 0);  // without --verify BEFORE files are not hashed
}

TEST_F(InfoCliTest, CraftedCapturesAreInputErrors) {
  json j = original_;
  j["kernel"]["mangled"] = 5;
  put_text(j.dump());
  expect_input_error("info " + out_.string(), "'kernel.mangled' has the wrong type");

  j = original_;
  j["config"] = "@";
  std::string text = j.dump();
  text.replace(text.find("\"@\""), 3, std::string(200000, '[') + std::string(200000, ']'));
  put_text(text);
  expect_input_error("info " + out_.string(), "nested deeper than 64");

  j = original_;
  j["params"]["file"] = "../../etc/hostname";
  put_text(j.dump());
  expect_input_error("info " + out_.string(), "'..' component");

  fs::remove(dir_ / kManifestName);
  ASSERT_EQ(::mkfifo((dir_ / kManifestName).c_str(), 0600), 0);
  expect_input_error("info " + out_.string(), "is a FIFO");
}

}  // namespace
}  // namespace kerncap::format
