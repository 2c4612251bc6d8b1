// The generated reproducer: files, Makefile rules, compile.json, kept edits, the no-source
// form, and (when nvcc and make are installed) a real `make recompile` of the fixture.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cubin/cubin.hpp"
#include "reproducer/generator.hpp"
#include "reproducer/variant.hpp"
#include "reproducer_fixtures.hpp"

namespace kerncap::reproducer {
namespace {

constexpr const char* kNvcc = "/usr/local/cuda/bin/nvcc";

class Generator : public ::testing::Test {
 protected:
  void SetUp() override {
    app_ = scratch_.install_app(kNvcc);
    out_ = scratch_.root() / "out";
    testing::write_fake_capture(out_, "_Z5alphaPi", "alpha(int*)");
  }
  source::Result find(const std::string& mangled, bool db = true) {
    source::Request q;
    q.mangled = mangled;
    q.source_dir = app_;
    if (db) q.compile_commands = app_ / "build/compile_commands.json";
    return source::find_source(q);
  }
  Generated generate(const source::Result& f, std::vector<std::string> defines = {}) {
    return generate_reproducer({out_, f, std::move(defines), "/opt/kerncap/bin/kerncap"});
  }
  static bool tools() { return fs::exists(kNvcc) && std::system("make --version >/dev/null 2>&1") == 0; }
  int make(const std::string& target) {
    return std::system(("make -s -C " + out_.string() + " " + target + " >" + (out_ / "make.log").string() + " 2>&1").c_str());
  }
  testing::Scratch scratch_;
  fs::path app_, out_;
};

TEST_F(Generator, WritesTheProject) {
  const Generated g = generate(find("_Z5alphaPi"), {"EXTRA_FLAG=3"});
  ASSERT_TRUE(g.recompile_available) << g.unavailable_reason;
  EXPECT_EQ(g.arch, "sm_90");
  for (const char* f : {"Makefile", "README.md", "compile.json", "kernel_variant.cu", "src/src/common.cuh",
                        "src/include/tmpl/kern.cuh"})
    EXPECT_TRUE(fs::exists(out_ / f)) << f;
  const std::string mk = testing::slurp(out_ / "Makefile");
  for (const char* s : {"KERNCAP ?= /opt/kerncap/bin/kerncap", "KERNEL := _Z5alphaPi", "\nrun:", "\nvalidate:",
                        "\nrecompile: $(VARIANT)", "\nrun-variant: $(VARIANT)", "\nvalidate-variant: $(VARIANT)",
                        "\nserve:", "serve --stop .", "\nncu:", "--clock-control none", "\nsanitize:", "--tool memcheck", "\nsass:",
                        "-Isrc/include", "-cubin -arch=sm_90", "EXTRA_DEFINES = -DEXTRA_FLAG=3", "NVCC ?= /usr/local/cuda/bin/nvcc"})
    EXPECT_NE(mk.find(s), std::string::npos) << s;
  EXPECT_EQ(mk.find('@' + std::string("KERNEL") + '@'), std::string::npos);
  const auto j = nlohmann::json::parse(testing::slurp(out_ / "compile.json"));
  EXPECT_EQ(j["format"], "kerncap-compile");
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["edit"]["file"], "kernel_variant.cu");
  EXPECT_EQ(j["edit"]["line"], 9);
  EXPECT_EQ(j["source"]["status"], "found");
  EXPECT_TRUE(j["recompile"]["available"].get<bool>());
  EXPECT_EQ(j["recompile"]["defines"], nlohmann::json::array({"-DEXTRA_FLAG=3"}));
  EXPECT_EQ(j["original"]["file"], (app_ / "src/a.cu").string());
  const std::string readme = testing::slurp(out_ / "README.md");
  EXPECT_NE(readme.find("alpha(int*)"), std::string::npos);
  EXPECT_NE(readme.find("make validate-variant"), std::string::npos);
  EXPECT_NE(readme.find("make serve"), std::string::npos);
  EXPECT_NE(readme.find("NVIDIA H100"), std::string::npos);
}

TEST_F(Generator, KernelInAHeaderIsEditedInTheMirror) {
  testing::write_fake_capture(out_, "_Z5twiceIiEvPT_PKS0_i", "void twice<int>(int*, int const*, int)");
  const Generated g = generate(find("_Z5twiceIiEvPT_PKS0_i"));
  ASSERT_TRUE(g.mirror);
  EXPECT_EQ(g.mirror->edit_file, "src/include/tmpl/kern.cuh");
  EXPECT_EQ(g.mirror->edit_line, 6u);
}

TEST_F(Generator, KeepsUserEditsWhenRegenerated) {
  generate(find("_Z5alphaPi"));
  testing::spit(out_ / "kernel_variant.cu", "// my edit\n");
  const Generated g = generate(find("_Z5alphaPi"));
  EXPECT_EQ(testing::slurp(out_ / "kernel_variant.cu"), "// my edit\n");
  EXPECT_TRUE(g.mirror->kept_existing);
  EXPECT_NE(testing::slurp(out_ / "README.md").find("were kept"), std::string::npos);
}

TEST_F(Generator, AnotherKernelsFilesAreSetAside) {
  generate(find("_Z5alphaPi"));
  testing::spit(out_ / "kernel_variant.cu", "// edits for alpha\n");
  testing::write_fake_capture(out_, "_Z4betaPi", "beta(int*)");  // extract --force of another kernel
  const Generated g = generate(find("_Z4betaPi"));
  EXPECT_EQ(testing::slurp(out_ / "kernel_variant.cu.prev"), "// edits for alpha\n");
  EXPECT_TRUE(fs::exists(out_ / "src.prev"));
  EXPECT_NE(testing::slurp(out_ / "kernel_variant.cu").find("beta"), std::string::npos);
  EXPECT_FALSE(g.mirror->kept_existing);
  ASSERT_FALSE(g.notes.empty());
  EXPECT_NE(g.notes[0].find(".prev"), std::string::npos);
}

TEST_F(Generator, WithoutSourceRecompileExplainsItself) {
  source::Request q;
  q.mangled = "_Z5alphaPi";  // no --source-dir
  const Generated g = generate(source::find_source(q));
  EXPECT_FALSE(g.recompile_available);
  EXPECT_FALSE(fs::exists(out_ / "kernel_variant.cu"));
  const std::string mk = testing::slurp(out_ / "Makefile");
  EXPECT_NE(mk.find("recompile $(VARIANT):"), std::string::npos);
  EXPECT_NE(mk.find("--source-dir"), std::string::npos);
  EXPECT_NE(mk.find("\nrun:"), std::string::npos);
  if (std::system("make --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "make not installed";
  EXPECT_NE(make("recompile"), 0);
  EXPECT_NE(testing::slurp(out_ / "make.log").find("recompile is not available"), std::string::npos);
}

TEST_F(Generator, RealRecompileOfTheUnmodifiedSource) {
  if (!tools()) GTEST_SKIP() << "nvcc or make not installed";
  const Generated g = generate(find("_Z5alphaPi"), {"UNUSED_DEFINE"});
  ASSERT_TRUE(g.recompile_available);
  ASSERT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
  const auto bytes = format::read_file(out_ / kVariantCubin);
  const cubin::Image img = cubin::parse_image(bytes);
  EXPECT_EQ(img.sm, 90);
  EXPECT_NE(img.find_kernel("_Z5alphaPi"), nullptr);
  // alpha is defined in the unit: kernel_instance.cu compiles the unit up to it, so the
  // instantiation its host code asks for afterwards is left out; the whole unit has it.
  EXPECT_EQ(g.unit, "kernel_instance.cu") << g.whole_unit_reason;
  EXPECT_EQ(img.find_kernel("_Z5twiceIfEvPT_PKS0_i"), nullptr);
  ASSERT_EQ(make("-B recompile WHOLE_UNIT=1"), 0) << testing::slurp(out_ / "make.log");
  EXPECT_NE(cubin::parse_image(format::read_file(out_ / kVariantCubin)).find_kernel("_Z5twiceIfEvPT_PKS0_i"), nullptr);
  // The original tree was not written to.
  EXPECT_FALSE(fs::exists(app_ / "src/kernel_variant.cu"));
  EXPECT_FALSE(fs::exists(app_ / "build/src/a.o"));
  // Fresh: validate would pick it; an edit makes it stale; recompiling makes it fresh again.
  EXPECT_TRUE(fresh_variant(out_).cubin);
  fs::last_write_time(out_ / "src/src/common.cuh", fs::last_write_time(out_ / kVariantCubin) + std::chrono::seconds(2));
  EXPECT_FALSE(fresh_variant(out_).cubin);
  EXPECT_NE(fresh_variant(out_).note.find("src/src/common.cuh"), std::string::npos);
}

TEST_F(Generator, DefinesFromExtractReachTheCompile) {
  if (!tools()) GTEST_SKIP() << "nvcc or make not installed";
  // A unit that only compiles when the define is given.
  testing::spit(app_ / "src/a.cu", "#ifndef NEEDED\n#error NEEDED missing\n#endif\n" + testing::slurp(app_ / "src/a.cu"));
  generate(find("_Z5alphaPi"));
  EXPECT_NE(make("recompile"), 0);
  fs::remove(out_ / "kernel_variant.cu");
  generate(find("_Z5alphaPi"), {"-DNEEDED"});
  EXPECT_EQ(make("recompile"), 0) << testing::slurp(out_ / "make.log");
}

}  // namespace
}  // namespace kerncap::reproducer
