// Compile command lines: shell splitting and quoting, the argument model, include paths,
// and compile_commands.json loading.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "source/args.hpp"
#include "source/compile_db.hpp"
#include "source_fixtures.hpp"

namespace kerncap::source {
namespace {

TEST(SourceArgs, ShellSplitHandlesQuotesAndEscapes) {
  EXPECT_EQ(shell_split(R"(nvcc -DNAME="a b" '-DX=$y' -I dir\ with\ space "--generate-code=arch=compute_90,code=[sm_90]")"),
            (std::vector<std::string>{"nvcc", "-DNAME=a b", "-DX=$y", "-I", "dir with space",
                                      "--generate-code=arch=compute_90,code=[sm_90]"}));
  EXPECT_EQ(shell_split(R"(a "q\"uote" "")"), (std::vector<std::string>{"a", "q\"uote", ""}));
  EXPECT_THROW(shell_split("nvcc 'unterminated"), Error);
}

TEST(SourceArgs, ShellQuoteRoundTrips) {
  for (std::string w : {"plain", "with space", "it's", "$HOME", "-DA=\"b\"", ""})
    EXPECT_EQ(shell_split("x " + shell_quote(w)), (std::vector<std::string>{"x", w})) << w;
  EXPECT_EQ(shell_quote("-I/usr/include"), "-I/usr/include");
}

TEST(SourceArgs, ParseArgsKnowsForms) {
  auto a = parse_args({"-Iinc", "-I", "other", "--include-path=third", "-isystem", "/sys", "-o", "x.o", "-c",
                       "-lineinfo", "-DX=1", "-arch=sm_80", "-Xcompiler", "-fPIC", "main.cu"});
  ASSERT_EQ(a.size(), 11u);
  EXPECT_EQ(a[0].form, Arg::Form::Joined);
  EXPECT_EQ(a[0].value, "inc");
  EXPECT_EQ(a[1].form, Arg::Form::Separate);
  EXPECT_EQ(a[2].form, Arg::Form::Equals);
  EXPECT_EQ(a[2].opt, "--include-path");
  EXPECT_EQ(a[5].opt, "-c");
  EXPECT_EQ(a[6].opt, "-lineinfo");  // not "-l" + "ineinfo"
  EXPECT_EQ(a[6].form, Arg::Form::Bare);
  EXPECT_EQ(a[7].opt, "-D");
  EXPECT_EQ(a[8].opt, "-arch");
  EXPECT_EQ(a[9].value, "-fPIC");
  EXPECT_EQ(a[10].opt, "main.cu");
  EXPECT_EQ(a[2].words(), std::vector<std::string>{"--include-path=third"});
}

TEST(SourceArgs, SearchPathsResolveAgainstTheDirectory) {
  auto sp = search_paths(parse_args({"-Iinc", "-iquote", "q", "-isystem", "/sys", "-include", "pre.h"}), "/build");
  EXPECT_EQ(sp.angle, std::vector<fs::path>{"/build/inc"});
  EXPECT_EQ(sp.quote, std::vector<fs::path>{"/build/q"});
  EXPECT_EQ(sp.system, std::vector<fs::path>{"/sys"});
  EXPECT_EQ(sp.forced, std::vector<fs::path>{"/build/pre.h"});
}

TEST(SourceArgs, CompilerFamilies) {
  EXPECT_EQ(compiler_of("/usr/local/cuda/bin/nvcc"), Compiler::Nvcc);
  EXPECT_EQ(compiler_of("clang++-18"), Compiler::Clang);
  EXPECT_EQ(compiler_of("/usr/bin/c++"), Compiler::Other);
  EXPECT_TRUE(is_launcher("/usr/bin/ccache"));
  EXPECT_FALSE(is_launcher("nvcc"));
}

TEST(SourceCompileDb, LoadsCommandAndArgumentsForms) {
  testing::Scratch s;
  const fs::path app = s.install_app();
  const CompileDb db = load_compile_db(app / "build/compile_commands.json");
  ASSERT_EQ(db.entries.size(), 3u);
  EXPECT_EQ(db.entries[0].file, app / "src/a.cu");
  EXPECT_EQ(db.entries[0].output, app / "build/src/a.o");
  EXPECT_EQ(db.entries[1].file, app / "src/b.cu");  // "../src/b.cu" against the directory
  EXPECT_EQ(db.entries[1].argv.front(), "ccache");
  EXPECT_EQ(db.for_file(app / "src/../src/b.cu").size(), 1u);
  EXPECT_TRUE(db.for_file(app / "src/jit.cu").empty());
}

TEST(SourceCompileDb, MalformedDatabasesAreInputErrors) {
  testing::Scratch s;
  testing::spit(s.root() / "a.json", "{\"not\": \"an array\"}");
  testing::spit(s.root() / "b.json", "[{\"directory\": \"/x\"}]");
  testing::spit(s.root() / "c.json", "[{\"directory\": \"/x\", \"file\": \"a.cu\"}]");
  for (const char* f : {"a.json", "b.json", "c.json", "missing.json"}) {
    try {
      load_compile_db(s.root() / f);
      ADD_FAILURE() << f << " loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << f;
    }
  }
}

TEST(SourceCompileDb, FoundNextToTheTree) {
  testing::Scratch s;
  const fs::path app = s.install_app();
  auto found = find_compile_dbs(app / "src");  // up one level, then build*/
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], app / "build/compile_commands.json");
}

}  // namespace
}  // namespace kerncap::source
