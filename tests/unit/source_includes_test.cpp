// #include resolution and tracing through the fixture project, with the search order of
// gcc/nvcc and only files inside the tree followed.
#include <gtest/gtest.h>

#include "source/compile_db.hpp"
#include "source/includes.hpp"
#include "source_fixtures.hpp"

namespace kerncap::source {
namespace {

TEST(SourceIncludes, DirectivesFromTokens) {
  auto d = include_directives(lex("#include <a.h>\n# include \"b/c.h\" // x\n#include MACRO\n#include_next <d.h>\n"));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_FALSE(d[0].quoted);
  EXPECT_EQ(d[0].spelled, "a.h");
  EXPECT_TRUE(d[1].quoted);
  EXPECT_EQ(d[1].spelled, "b/c.h");
  EXPECT_EQ(d[1].line, 2u);
  EXPECT_EQ(d[2].spelled, "d.h");
}

TEST(SourceIncludes, QuotedLooksNextToTheFileFirstAngleDoesNot) {
  testing::Scratch s;
  testing::spit(s.root() / "dir/x.h", "");
  testing::spit(s.root() / "inc/x.h", "");
  SearchPaths sp;
  sp.angle = {s.root() / "inc"};
  const fs::path from = s.root() / "dir/main.cu";
  EXPECT_EQ(resolve_include({1, true, "x.h"}, from, sp), s.root() / "dir/x.h");
  EXPECT_EQ(resolve_include({1, false, "x.h"}, from, sp), s.root() / "inc/x.h");
  EXPECT_FALSE(resolve_include({1, false, "nope.h"}, from, sp));
}

TEST(SourceIncludes, TraceFollowsOnlyTheTree) {
  testing::Scratch s;
  const fs::path app = s.install_app();
  SearchPaths sp;
  sp.angle = {app / "include"};
  SourceCache cache;
  const IncludeClosure c = trace_includes(app / "src/a.cu", sp, app, cache);
  EXPECT_EQ(c.files, (std::vector<fs::path>{app / "include/tmpl/kern.cuh", app / "src/common.cuh"}));
  EXPECT_TRUE(c.contains(app / "src/a.cu"));
  // The edge out of the tree is recorded (resolved) but not followed.
  bool outside = false;
  for (const auto& e : c.edges)
    if (e.directive.spelled == "../../../outside/ext.h") outside = e.to == s.root() / "outside/ext.h";
  EXPECT_TRUE(outside);
}

TEST(SourceIncludes, InsideComparesWholeComponents) {
  EXPECT_TRUE(inside("/a/b/c.h", "/a/b"));
  EXPECT_FALSE(inside("/a/bc/c.h", "/a/b"));
  EXPECT_FALSE(inside("/a/b", "/a/b"));
}

}  // namespace
}  // namespace kerncap::source
