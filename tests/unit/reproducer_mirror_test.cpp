// Include rewriting in kernel_variant.cu and the mirrored headers.
#include <gtest/gtest.h>

#include "reproducer/mirror.hpp"
#include "source/compile_db.hpp"
#include "source_fixtures.hpp"

namespace kerncap::reproducer {
namespace {

TEST(ReproducerMirror, RewritesTheUnitsQuotedIncludesAndEscapes) {
  testing::Scratch s;
  const fs::path app = s.install_app();
  source::SearchPaths sp;
  sp.angle = {app / "include"};
  source::SourceCache cache;
  const auto closure = source::trace_includes(app / "src/a.cu", sp, app, cache);
  int n = 0;
  const std::string unit = rewrite_includes(testing::slurp(app / "src/a.cu"), app / "src/a.cu", true, closure, app, &n);
  EXPECT_NE(unit.find("#include \"src/src/common.cuh\""), std::string::npos) << unit;
  EXPECT_NE(unit.find("#include <tmpl/kern.cuh>"), std::string::npos);  // found through -I: the -I is remapped
  EXPECT_EQ(n, 1);
  const fs::path header = app / "include/tmpl/kern.cuh";
  const std::string h = rewrite_includes(testing::slurp(header), header, false, closure, app, &n);
  EXPECT_NE(h.find("#include \"" + (s.root() / "outside/ext.h").string() + "\""), std::string::npos) << h;
  EXPECT_EQ(n, 1);
}

TEST(ReproducerMirror, UntouchedTextStaysByteIdentical) {
  source::IncludeClosure none;
  const std::string text = "int a;\r\n#include \"x.h\"\nno newline at end";
  EXPECT_EQ(rewrite_includes(text, "/t/a.cu", true, none, "/t"), text);
}

}  // namespace
}  // namespace kerncap::reproducer
