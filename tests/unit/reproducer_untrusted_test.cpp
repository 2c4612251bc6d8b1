// The reproducer is written from capture data, which may be crafted: names with newlines,
// `$(...)`, backticks and Makefile syntax must land as text; planted *.tmp symlinks must not
// be written through; the files are private.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "common/error.hpp"
#include "reproducer/generator.hpp"
#include "reproducer/render.hpp"
#include "reproducer_fixtures.hpp"

namespace kerncap::reproducer {
namespace {

// Each payload would create a file named PWNED* if make or the shell ran it.
const std::string kEvil =
    "kernel(float*)\n"
    "run:\n"
    "\ttouch PWNED1\n"
    "$(shell touch PWNED2) `touch PWNED3` $$(touch PWNED4) \\\n"
    "include /etc/passwd\r\n"
    "# \\";

class UntrustedCapture : public ::testing::Test {
 protected:
  void SetUp() override { out_ = scratch_.root() / "out"; }
  Generated generate() {
    source::Result none;  // no source: the generator writes every file but kernel_variant.cu
    none.summary = "no source";
    return generate_reproducer({out_, none, {}, "/opt/kerncap/bin/kerncap"});
  }
  bool pwned() const {
    for (const char* f : {"PWNED1", "PWNED2", "PWNED3", "PWNED4"})
      if (fs::exists(out_ / f)) return true;
    return false;
  }
  testing::Scratch scratch_;
  fs::path out_;
};

TEST_F(UntrustedCapture, DemangledNameCannotInjectMakefileCode) {
  testing::write_fake_capture(out_, "_Z6kernelPf", kEvil);
  generate();
  const std::string mk = testing::slurp(out_ / "Makefile");
  // Only the template's lines start a rule or a directive.
  EXPECT_EQ(mk.find("\nrun:"), mk.rfind("\nrun:"));
  EXPECT_EQ(mk.find("\ninclude"), std::string::npos);
  EXPECT_EQ(mk.find("\n\ttouch"), std::string::npos);
  EXPECT_NE(mk.find("kernel(float*)\\nrun:\\n\\ttouch PWNED1"), std::string::npos);
  const std::string readme = testing::slurp(out_ / "README.md");
  EXPECT_EQ(readme.find("\nrun:"), std::string::npos);
  EXPECT_EQ(readme.find("\ninclude"), std::string::npos);
  if (std::system("make --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no make";
  for (const char* target : {"help", "-n run", "-n sass", "-n recompile"})
    (void)std::system(("cd " + out_.string() + " && make -s " + target + " >/dev/null 2>&1").c_str());
  EXPECT_FALSE(pwned());
}

TEST_F(UntrustedCapture, ControlCharactersInMakefileWordsAreRefused) {
  testing::write_fake_capture(out_, "_Z6kernelPf\n\ttouch PWNED1", "kernel(float*)");
  try {
    generate();
    ADD_FAILURE() << "a mangled name with a newline reached the Makefile";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("control character"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out_ / "Makefile"));
}

TEST_F(UntrustedCapture, PlantedTmpSymlinksAreNotWrittenThrough) {
  testing::write_fake_capture(out_, "_Z6kernelPf", "kernel(float*)");
  const fs::path victim = scratch_.root() / "victim";
  std::ofstream(victim) << "precious";
  for (const char* name : {"Makefile.tmp", "README.md.tmp", "compile.json.tmp", "Makefile", "compile.json"})
    fs::create_symlink(victim, out_ / name);
  generate();
  EXPECT_EQ(testing::slurp(victim), "precious");
  for (const char* name : {"Makefile", "README.md", "compile.json"}) {
    EXPECT_FALSE(fs::is_symlink(out_ / name)) << name;
    EXPECT_FALSE(testing::slurp(out_ / name).empty()) << name;
  }
}

TEST_F(UntrustedCapture, FilesArePrivateUnderUmaskZero) {
  testing::write_fake_capture(out_, "_Z6kernelPf", "kernel(float*)");
  const mode_t old = ::umask(0);
  generate();
  ::umask(old);
  for (const char* name : {"Makefile", "README.md", "compile.json"}) {
    struct stat st{};
    ASSERT_EQ(stat((out_ / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
}

TEST(ReproducerEscaping, MarkdownAndComments) {
  EXPECT_EQ(one_line("a\nb\r\x01"), "a\\nb\\r\\x01");
  EXPECT_EQ(make_comment("x\\"), "x\\ ");
  EXPECT_EQ(md_code("f(int)"), "`f(int)`");
  EXPECT_EQ(md_code("a`b"), "``a`b``");
  EXPECT_EQ(md_code("`x"), "`` `x ``");
  EXPECT_EQ(md_code("a|b\nc"), "`a\\|b\\nc`");
  EXPECT_EQ(md_text("H100 <b>[x](y)</b>"), "H100 \\<b\\>\\[x\\]\\(y\\)\\</b\\>");
  EXPECT_THROW(make_word("a\nb", false), Error);
  EXPECT_THROW(make_word("-DX=a\\#b", true), Error);
}

}  // namespace
}  // namespace kerncap::reproducer
