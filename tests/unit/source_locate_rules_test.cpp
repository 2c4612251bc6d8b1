// `kerncap locate --rules FILE` as untrusted input (the fuzzer's findings): regexes are
// bounded before std::regex compiles them (its compiler recurses per character and per
// group), and the file is read through the hardened reader (no FIFO, device, directory or
// huge file).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.hpp"
#include "source/locate_rules.hpp"

namespace kerncap::source {
namespace {

namespace fs = std::filesystem;

// The Error's kind and message of parsing or loading, or Internal with "" when none came.
template <class F>
std::pair<ErrorKind, std::string> refusal(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::Internal, ""};
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string rule_with(const std::string& key, const std::string& re) {
  return "[[rule]]\nname = \"mine\"\nstrategy = \"aten\"\n" + key + " = '" + re + "'\n";
}

TEST(LocateRulesBounds, LongPatternIsRefusedNamingFileRuleAndKey) {
  const auto [kind, what] = refusal([] { parse_locate_rules(rule_with("match", std::string(1025, 'a')), "u.toml"); });
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_TRUE(has(what, "u.toml:4")) << what;
  EXPECT_TRUE(has(what, "[[rule]] \"mine\"")) << what;
  EXPECT_TRUE(has(what, "match: a regular expression of 1025 bytes; at most 1024 are accepted")) << what;
  // 1 KiB itself is fine.
  EXPECT_EQ(parse_locate_rules(rule_with("match", std::string(1024, 'a')), "u.toml").rules.size(), 1u);
}

TEST(LocateRulesBounds, HugePatternsDoNotOverflowTheStack) {
  // What overflowed std::regex's compiler before the bound: long and deeply grouped.
  for (const std::string& re : {std::string(200000, 'a'), std::string(50000, '(') + std::string(50000, ')'),
                                std::string(100000, '(') + "a"}) {
    for (const char* key : {"match", "functors", "codegen"}) {
      const auto [kind, what] = refusal([&] { parse_locate_rules(rule_with(key, re), "deep.toml"); });
      EXPECT_EQ(kind, ErrorKind::Input) << key;
      EXPECT_TRUE(has(what, "deep.toml:4")) << what.substr(0, 200);
    }
  }
  const std::string test_rule = "[[test]]\nfile = '" + std::string(5000, '(') + "'\ncommand = \"x\"\n";
  const auto [kind, what] = refusal([&] { parse_locate_rules(test_rule, "t.toml"); });
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_TRUE(has(what, "t.toml:2: [[test]] 1: file:")) << what.substr(0, 200);
}

TEST(LocateRulesBounds, DeepGroupsAreRefusedShallowOnesAndBracketsAreNot) {
  const std::string deep = std::string(17, '(') + "a" + std::string(17, ')');
  const auto [kind, what] = refusal([&] { parse_locate_rules(rule_with("match", deep), "d.toml"); });
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_TRUE(has(what, "groups nested 17 deep; at most 16 are accepted")) << what;
  // 16 deep is accepted; escaped parentheses and ones in a bracket expression are not groups.
  const std::string ok = std::string(16, '(') + "a" + std::string(16, ')');
  EXPECT_EQ(parse_locate_rules(rule_with("match", ok), "d.toml").rules.size(), 1u);
  std::string escaped;
  for (int i = 0; i < 40; ++i) escaped += "\\(";
  EXPECT_EQ(parse_locate_rules(rule_with("match", "[" + std::string(40, '(') + "]" + escaped), "d.toml").rules.size(),
            1u);
  // A rule without a name is named by its place in the file.
  const auto [k2, w2] = refusal([&] {
    parse_locate_rules("[[rule]]\nstrategy = \"cxx\"\n[[rule]]\nstrategy = \"cxx\"\nmatch = '" + deep + "'\n",
                       "n.toml");
  });
  EXPECT_EQ(k2, ErrorKind::Input);
  EXPECT_TRUE(has(w2, "n.toml:5: [[rule]] 2: match:")) << w2;
  // The built-in table stays within the bounds.
  EXPECT_GE(load_locate_rules({}).rules.size(), 10u);
}

class LocateRulesFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kerncap-locate-rules-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::pair<ErrorKind, std::string> load(const fs::path& p) {
    return refusal([&] { (void)load_locate_rules({p.string()}); });
  }
  fs::path dir_;
};

TEST_F(LocateRulesFiles, ARegularFileIsRead) {
  const fs::path p = dir_ / "rules.toml";
  std::ofstream(p) << "[[rule]]\nname = \"mine\"\nmatch = '^my_'\nstrategy = \"closed\"\nlibrary = \"libmine\"\n";
  const LocateRules r = load_locate_rules({p.string()});
  ASSERT_GE(r.rules.size(), 2u);
  EXPECT_EQ(r.rules.front().name, "mine");
}

TEST_F(LocateRulesFiles, AMissingFileIsAUsageError) {
  const auto [kind, what] = load(dir_ / "none.toml");
  EXPECT_EQ(kind, ErrorKind::Usage);
  EXPECT_TRUE(has(what, "--rules " + (dir_ / "none.toml").string() + ": cannot read it")) << what;
}

TEST_F(LocateRulesFiles, FifoDeviceDirectoryAndHugeFilesAreRefusedAtOnce) {
  const fs::path p = dir_ / "rules.toml";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  auto [kind, what] = load(p);  // a FIFO: refused without blocking
  EXPECT_EQ(kind, ErrorKind::Input);
  EXPECT_TRUE(has(what, "--rules " + p.string())) << what;
  EXPECT_TRUE(has(what, "not a regular file")) << what;
  fs::remove(p);
  fs::create_symlink(dir_ / "fifo", p);
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  std::tie(kind, what) = load(p);  // a link to a FIFO
  EXPECT_EQ(kind, ErrorKind::Input) << what;
  fs::remove(p);
  fs::create_symlink("/dev/zero", p);
  std::tie(kind, what) = load(p);  // a device: never read
  EXPECT_EQ(kind, ErrorKind::Input) << what;
  EXPECT_TRUE(has(what, "not a regular file")) << what;
  fs::remove(p);
  fs::create_directory(p);
  std::tie(kind, what) = load(p);
  EXPECT_EQ(kind, ErrorKind::Input) << what;
  fs::remove(p);
  std::ofstream(p) << "#";
  fs::resize_file(p, (uint64_t{1} << 20) + 1);  // sparse, one byte past 1 MiB
  std::tie(kind, what) = load(p);
  EXPECT_EQ(kind, ErrorKind::Input) << what;
  EXPECT_TRUE(has(what, "more than the 1048576 this reader accepts")) << what;
}

}  // namespace
}  // namespace kerncap::source
