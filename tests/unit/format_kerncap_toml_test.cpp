// OUT/kerncap.toml: a complete file reads into the struct; the default file reads back as
// kerncap's defaults; every malformed input is refused with the key and its line.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "common/error.hpp"
#include "format/kerncap_toml.hpp"
#include "lint_fixtures.hpp"

namespace kerncap::format {
namespace {

using compare::DType;
namespace fs = std::filesystem;

// The message of the Error(Input) the text is refused with, or "" when it parses.
std::string refusal(const std::string& text) {
  try {
    parse_kerncap_toml(text, "OUT/kerncap.toml");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  return "";
}

TEST(KerncapToml, CompleteFile) {
  const KerncapConfig c = parse_kerncap_toml(R"(
[tolerances]
fp32 = { atol = 1e-6, rtol = 1e-4 }
bfloat16 = { rtol = 0.05 }
int32 = { atol = 1 }

[invariants]
no_nan = true
non_negative = true

[artifact_checks]
max_registers = 128
max_spills = 0
max_local_memory = 64
required_patterns = ["HGMMA", "LDG\\.E\\.128"]
forbidden_patterns = ['\bLDL\b']

[timing]
min_speedup = 1.2
)",
                                             "t");
  ASSERT_EQ(c.tolerances.size(), 3u);
  EXPECT_DOUBLE_EQ(c.tolerances.at(DType::F32).atol, 1e-6);
  EXPECT_DOUBLE_EQ(c.tolerances.at(DType::F32).rtol, 1e-4);
  EXPECT_DOUBLE_EQ(c.tolerances.at(DType::BF16).rtol, 0.05);
  // A key left out keeps the dtype's default.
  EXPECT_DOUBLE_EQ(c.tolerances.at(DType::BF16).atol, compare::default_tolerance(DType::BF16).atol);
  EXPECT_DOUBLE_EQ(c.tolerances.at(DType::I32).atol, 1.0);  // an integer where a number is expected
  EXPECT_TRUE(c.invariants.no_nan);
  EXPECT_FALSE(c.invariants.no_inf);
  EXPECT_TRUE(c.invariants.non_negative);
  EXPECT_FALSE(c.invariants.must_write);
  EXPECT_EQ(c.artifact_checks.max_registers, 128);
  EXPECT_EQ(c.artifact_checks.max_spills, 0);
  EXPECT_EQ(c.artifact_checks.max_local_memory, 64);
  EXPECT_EQ(c.artifact_checks.required_patterns, (std::vector<std::string>{"HGMMA", "LDG\\.E\\.128"}));
  EXPECT_EQ(c.artifact_checks.forbidden_patterns, (std::vector<std::string>{"\\bLDL\\b"}));
  ASSERT_TRUE(c.timing.min_speedup);
  EXPECT_DOUBLE_EQ(*c.timing.min_speedup, 1.2);
}

TEST(KerncapToml, EmptyFileSetsNothing) {
  const KerncapConfig c = parse_kerncap_toml("", "t");
  EXPECT_TRUE(c.tolerances.empty());
  EXPECT_FALSE(c.artifact_checks.max_registers);
  EXPECT_FALSE(c.timing.min_speedup);
}

TEST(KerncapToml, DefaultFileReadsBack) {
  const KerncapConfig c = parse_kerncap_toml(default_kerncap_toml(), "default");
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    ASSERT_EQ(c.tolerances.count(t), 1u) << compare::to_string(t);
    EXPECT_DOUBLE_EQ(c.tolerances.at(t).atol, compare::default_tolerance(t).atol);
    EXPECT_DOUBLE_EQ(c.tolerances.at(t).rtol, compare::default_tolerance(t).rtol);
  }
  EXPECT_FALSE(c.invariants.no_nan);
  EXPECT_EQ(c.artifact_checks.max_registers, 255);  // the hardware limit: never fails by itself
  EXPECT_FALSE(c.artifact_checks.max_spills);
  EXPECT_TRUE(c.artifact_checks.required_patterns.empty());
  EXPECT_FALSE(c.timing.min_speedup);
}

TEST(KerncapToml, WriteDefaultKeepsAnExistingFile) {
  lint::testing::TempDir out;
  fs::create_directories(out.path() / "capture");
  EXPECT_TRUE(write_default_kerncap_toml(out.path() / "capture"));  // OUT/capture names OUT
  ASSERT_TRUE(fs::exists(out.path() / kKerncapTomlName));
  EXPECT_TRUE(load_kerncap_toml(out.path()).has_value());
  std::ofstream(out.path() / kKerncapTomlName) << "[timing]\nmin_speedup = 2\n";
  EXPECT_FALSE(write_default_kerncap_toml(out.path()));
  EXPECT_DOUBLE_EQ(*load_kerncap_toml(out.path())->timing.min_speedup, 2.0);
}

TEST(KerncapToml, AbsentFileIsNotAnError) {
  lint::testing::TempDir out;
  EXPECT_FALSE(load_kerncap_toml(out.path()).has_value());
}

TEST(KerncapToml, UnknownKeyNamesKeyAndLine) {
  const std::string e = refusal("[artifact_checks]\nmax_registers = 64\nmax_regs = 32\n");
  EXPECT_NE(e.find("OUT/kerncap.toml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key \"max_regs\""), std::string::npos) << e;
  EXPECT_NE(e.find("max_registers"), std::string::npos) << e;  // lists the known keys
}

TEST(KerncapToml, UnknownSectionAndDtype) {
  EXPECT_NE(refusal("[tolerance]\nfp32 = { atol = 1 }\n").find("unknown section"), std::string::npos);
  const std::string e = refusal("[tolerances]\nfloat33 = { atol = 1 }\n");
  EXPECT_NE(e.find(":2: [tolerances] float33: unknown dtype"), std::string::npos) << e;
  EXPECT_NE(refusal("[tolerances]\nfp32 = { atol = 1, eps = 2 }\n").find("unknown key \"eps\""), std::string::npos);
}

TEST(KerncapToml, WrongTypesNameTheKey) {
  std::string e = refusal("[artifact_checks]\nmax_registers = \"64\"\n");
  EXPECT_NE(e.find(":2: [artifact_checks] max_registers: expected an integer, found a string"), std::string::npos) << e;
  e = refusal("[artifact_checks]\nmax_spills = -1\n");
  EXPECT_NE(e.find("expected an integer >= 0"), std::string::npos) << e;
  e = refusal("[invariants]\nno_nan = 1\n");
  EXPECT_NE(e.find(":2: [invariants] no_nan: expected true or false"), std::string::npos) << e;
  e = refusal("[tolerances]\nfp32 = { atol = \"tiny\" }\n");
  EXPECT_NE(e.find("[tolerances] fp32.atol: expected a number"), std::string::npos) << e;
  e = refusal("[tolerances]\nfp32 = 0.1\n");
  EXPECT_NE(e.find("[tolerances] fp32: expected a table"), std::string::npos) << e;
  e = refusal("[timing]\nmin_speedup = 0\n");
  EXPECT_NE(e.find("expected a number > 0"), std::string::npos) << e;
  e = refusal("[artifact_checks]\nrequired_patterns = \"HGMMA\"\n");
  EXPECT_NE(e.find("expected an array of regular expressions"), std::string::npos) << e;
  e = refusal("[artifact_checks]\nforbidden_patterns = [\"LDL\", 3]\n");
  EXPECT_NE(e.find("expected a string"), std::string::npos) << e;
  e = refusal("artifact_checks = 3\n");
  EXPECT_NE(e.find("[artifact_checks]: expected a table"), std::string::npos) << e;
}

TEST(KerncapToml, BadRegexNamesPatternAndLine) {
  const std::string e = refusal("[artifact_checks]\n\nrequired_patterns = [\n  \"HGMMA\",\n  \"LDG(\",\n]\n");
  EXPECT_NE(e.find("OUT/kerncap.toml:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("bad regular expression \"LDG(\""), std::string::npos) << e;
}

TEST(KerncapToml, InvalidTomlGivesLineAndColumn) {
  const std::string e = refusal("[timing]\nmin_speedup = = 2\n");
  EXPECT_NE(e.find("OUT/kerncap.toml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid TOML"), std::string::npos) << e;
  EXPECT_NE(refusal("[invariants]\nno_nan = true\nno_nan = false\n").find(":3:"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::format

namespace kerncap::format {
namespace {

// Every evaluation of the judge reads OUT/kerncap.toml, and reproducers are shared: anything
// but a regular file inside OUT is refused with an input error, never followed, blocked on or
// read without end (issue 38's fuzz run: a FIFO blocked validate, a link to /dev/zero read on,
// a directory was silently taken for "no rules").
TEST(KerncapToml, OnlyARegularBoundedFileInOutIsRead) {
  lint::testing::TempDir out;
  const fs::path toml = out.path() / kKerncapTomlName;
  auto refused = [&] {
    try {
      load_kerncap_toml(out.path());
    } catch (const Error& e) {
      return e.kind() == ErrorKind::Input;
    }
    return false;
  };
  fs::create_directory(toml);
  EXPECT_TRUE(refused());  // a directory
  fs::remove(toml);
  ASSERT_EQ(::mkfifo(toml.c_str(), 0600), 0);
  EXPECT_TRUE(refused());  // a FIFO: refused at once, not read
  fs::remove(toml);
  fs::create_symlink("/dev/zero", toml);
  EXPECT_TRUE(refused());  // a link out of OUT
  fs::remove(toml);
  std::ofstream(toml) << "# " << std::string(kMaxKerncapTomlBytes, 'x') << "\n";
  EXPECT_TRUE(refused());  // too large
  std::ofstream(toml, std::ios::trunc) << "[invariants]\nno_nan = true\n";
  ASSERT_TRUE(load_kerncap_toml(out.path()));
  EXPECT_TRUE(load_kerncap_toml(out.path())->invariants.no_nan);
}

}  // namespace
}  // namespace kerncap::format

namespace kerncap::format {
namespace {

// The fuzzer's finding: std::regex compiles recursively, so a 50,000-deep group (or a long
// pattern) overflowed the stack while kerncap.toml was read. Long patterns are refused.
TEST(KerncapTomlPatterns, LongOrDeepPatternsAreRefusedNotCompiled) {
  for (const std::string& re : {std::string(20000, '(') + "a" + std::string(20000, ')'), std::string(200000, 'a')}) {
    try {
      parse_kerncap_toml("[artifact_checks]\nrequired_patterns = [\"" + re + "\"]\n", "OUT/kerncap.toml");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input);
      EXPECT_NE(std::string(e.what()).find("at most 1024 are accepted"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(parse_kerncap_toml("[artifact_checks]\nrequired_patterns = [\"" + std::string(100, '(') + "a" +
                                         std::string(100, ')') + "\"]\n",
                                     "OUT/kerncap.toml"));
}

}  // namespace
}  // namespace kerncap::format
