// Template filling and Makefile quoting.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "reproducer/render.hpp"

namespace kerncap::reproducer {
namespace {

TEST(ReproducerRender, ReplacesPlaceholdersOnce) {
  EXPECT_EQ(render("a @X@ b @Y_2@ @echo x@", {{"X", "@Y_2@"}, {"Y_2", "y"}}), "a @Y_2@ b y @echo x@");
  EXPECT_EQ(render("mail@host.com", {}), "mail@host.com");
  try {
    render("@MISSING@", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
    EXPECT_NE(std::string(e.what()).find("@MISSING@"), std::string::npos);
  }
}

TEST(ReproducerRender, MakeQuoting) {
  EXPECT_EQ(make_word("-DX=1", true), "-DX=1");
  EXPECT_EQ(make_word("-DNAME=\"a b\"", true), "'-DNAME=\"a b\"'");
  EXPECT_EQ(make_word("$HOME", false), "'$$HOME'");
  EXPECT_EQ(make_word("-DHASH=#1", true), "'-DHASH=\\#1'");
  EXPECT_EQ(make_word("-DHASH=#1", false), "'-DHASH=#1'");
  EXPECT_EQ(make_echo_lines("one\ntwo's"), "\t@echo one\n\t@echo 'two'\\''s'");
}

}  // namespace
}  // namespace kerncap::reproducer
