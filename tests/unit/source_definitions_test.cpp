// The definition scanner on tests/fixtures/source/forms/kernels.cu: every form found with
// its scopes, template-ness, linkage and parameter count; nothing from comments, strings
// or class bodies; braces across #if branches do not shift what follows.
#include <gtest/gtest.h>

#include <map>

#include "source/definitions.hpp"
#include "source/lexer.hpp"
#include "source_fixtures.hpp"

namespace kerncap::source {
namespace {

class Forms : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto macros = lex(testing::slurp(testing::fixtures() / "forms/macros.h"));
    markers_ = global_macros(macros);
    for (auto& d : find_kernels(lex(testing::slurp(testing::fixtures() / "forms/kernels.cu")), markers_))
      found_.emplace(d.qualified() + (d.definition ? "" : ";"), d);
  }
  const Definition& get(const std::string& q) {
    auto it = found_.find(q);
    EXPECT_NE(it, found_.end()) << q << " not found";
    static Definition none;
    return it == found_.end() ? none : it->second;
  }
  std::set<std::string> markers_;
  std::multimap<std::string, Definition> found_;
};

TEST_F(Forms, MacroMarkersAreObjectLikeOnly) {
  EXPECT_EQ(markers_, std::set<std::string>{"KC_GLOBAL"});
}

TEST_F(Forms, PlainAndTemplated) {
  EXPECT_EQ(get("plain").param_count, 3);
  EXPECT_EQ(get("plain").line, 4u);
  EXPECT_FALSE(get("plain").is_template);
  const Definition& t = get("templated");
  EXPECT_TRUE(t.is_template);
  EXPECT_EQ(t.param_count, 2);
  EXPECT_EQ(t.line, 7u);
}

TEST_F(Forms, Namespaces) {
  EXPECT_EQ(get("outer::inner::nested").param_count, 1);
  EXPECT_EQ(get("outer::(anonymous namespace)::hidden").line, 14u);
  EXPECT_EQ(get("a::b::cxx17_nested").param_count, 2);
  EXPECT_EQ(get("qual::declared_here").definition, true);
  EXPECT_EQ(get("qual::declared_here;").definition, false);
}

TEST_F(Forms, NamespaceAfterAMacroInvocationWithoutSemicolon) {
  EXPECT_EQ(get("after_macro::still_found").param_count, 1);
}

TEST_F(Forms, LinkageAndMacros) {
  EXPECT_TRUE(get("internal").is_static);
  EXPECT_TRUE(get("c_prefix").extern_c);
  EXPECT_TRUE(get("c_block").extern_c);
  EXPECT_FALSE(get("plain").extern_c);
  EXPECT_EQ(get("via_macro").param_count, 1);
  EXPECT_EQ(get("bounded_by_macro").param_count, 3);
}

TEST_F(Forms, VariadicSpecializationAndOddParameters) {
  EXPECT_TRUE(get("variadic").variadic);
  auto range = found_.equal_range("templated");
  EXPECT_EQ(std::distance(range.first, range.second), 2);  // primary + explicit specialization
  EXPECT_EQ(get("after_branches").param_count, 3);
  EXPECT_EQ(get("with_defaults").param_count, 2);
  EXPECT_EQ(get("split_lines").line, 77u);
}

TEST_F(Forms, NothingFromCommentsStringsClassesOrDeclarations) {
  EXPECT_EQ(found_.count("in_comment"), 0u);
  EXPECT_EQ(found_.count("in_string"), 0u);
  EXPECT_EQ(found_.count("befriended"), 0u);
  EXPECT_EQ(found_.count("befriended;"), 0u);
  EXPECT_EQ(found_.count("declaration_only"), 0u);
  EXPECT_EQ(found_.count("declaration_only;"), 1u);
  EXPECT_EQ(found_.count("templated;"), 1u);  // the explicit instantiation
}

TEST(SourceLexer, LiteralsAndDirectives) {
  auto toks = lex("#include \"a//b.h\" // c\nint x = '\\''; auto s = R\"d(__global__ \")d\"; int y = 1'000;\n#define A \\\n  B\nz");
  ASSERT_GE(toks.size(), 3u);
  EXPECT_EQ(toks[0].kind, TokKind::Directive);
  EXPECT_EQ(toks[0].text, "include \"a//b.h\"");
  int strings = 0;
  for (const auto& t : toks) {
    if (t.kind == TokKind::String) {
      ++strings;
      EXPECT_EQ(string_contents(t.text), "__global__ \"");
    }
    EXPECT_NE(t.text, "__global__");
  }
  EXPECT_EQ(strings, 1);
  EXPECT_EQ(toks.back().text, "z");
  EXPECT_EQ(toks.back().line, 5u);  // the continued #define spans lines 3-4
}

}  // namespace
}  // namespace kerncap::source
