// The finder end to end on the fixture project (tests/fixtures/source/app) and, when the
// build has it, on examples/multifile with its real compile_commands.json and objects.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "source/finder.hpp"
#include "source_fixtures.hpp"

namespace kerncap::source {
namespace {

class Finder : public ::testing::Test {
 protected:
  void SetUp() override { app_ = scratch_.install_app(); }
  Result find(const std::string& mangled, bool with_db = true, std::vector<std::string> image = {}) {
    Request q;
    q.mangled = mangled;
    q.source_dir = app_;
    if (with_db) q.compile_commands = app_ / "build/compile_commands.json";
    q.image_kernels = std::move(image);
    q.image_kind = "cubin";
    return find_source(q);
  }
  testing::Scratch scratch_;
  fs::path app_;
};

std::string all_how(const Result& r) {
  std::string s;
  for (const auto& h : r.how) s += h + "\n";
  return s;
}

TEST_F(Finder, PlainKernelInATranslationUnit) {
  const Result r = find("_Z5alphaPi");
  ASSERT_EQ(r.status, Status::Found) << r.summary << "\n" << r.detail;
  EXPECT_EQ(r.definition, app_ / "src/a.cu");
  EXPECT_EQ(r.line, 9u);
  EXPECT_EQ(r.tu, app_ / "src/a.cu");
  ASSERT_TRUE(r.command);
  EXPECT_EQ(r.command->file, app_ / "src/a.cu");
  EXPECT_EQ(r.includes.files, (std::vector<fs::path>{app_ / "include/tmpl/kern.cuh", app_ / "src/common.cuh"}));
}

TEST_F(Finder, TemplateInHeaderDecidedByTheCapturedImage) {
  // Both a.cu and b.cu include twice<T>; a.cu's image also holds alpha and (anonymous)::hidden.
  const std::vector<std::string> image_a = {"_Z5twiceIfEvPT_PKS0_i", "_Z5alphaPi", "_ZN29_GLOBAL__N__0a1b2c3d_4_a_cu_x6hiddenEPi"};
  const Result r = find("_Z5twiceIfEvPT_PKS0_i", true, image_a);
  ASSERT_EQ(r.status, Status::Found) << r.summary << "\n" << r.detail;
  EXPECT_EQ(r.definition, app_ / "include/tmpl/kern.cuh");
  EXPECT_EQ(r.tu, app_ / "src/a.cu");
  EXPECT_NE(all_how(r).find("captured image"), std::string::npos) << all_how(r);
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_FALSE(r.candidates[1].why_not.empty());

  const std::vector<std::string> image_b = {"_Z5twiceIiEvPT_PKS0_i", "_Z4betaPi"};
  const Result rb = find("_Z5twiceIiEvPT_PKS0_i", true, image_b);
  ASSERT_EQ(rb.status, Status::Found) << rb.summary;
  EXPECT_EQ(rb.tu, app_ / "src/b.cu");
}

TEST_F(Finder, AnonymousNamespaceDecidedByNvccFileTag) {
  const Result r = find("_ZN29_GLOBAL__N__0a1b2c3d_4_b_cu_x6hiddenEPi");
  ASSERT_EQ(r.status, Status::Found) << r.summary << "\n" << r.detail;
  EXPECT_EQ(r.definition, app_ / "src/b.cu");
  EXPECT_NE(all_how(r).find("anonymous-namespace tag"), std::string::npos) << all_how(r);
}

TEST_F(Finder, TwoDefinitionsAndNoEvidenceIsAmbiguous) {
  // Only the demangled name (no anonymous-namespace file tag) and no image: a.cu or b.cu?
  Request q;
  q.mangled = "";
  q.demangled = "(anonymous namespace)::hidden(int*)";
  q.source_dir = app_;
  q.compile_commands = app_ / "build/compile_commands.json";
  const Result amb = find_source(q);
  EXPECT_EQ(amb.status, Status::Ambiguous) << amb.summary;
  EXPECT_NE(amb.detail.find("src/a.cu"), std::string::npos);
  EXPECT_NE(amb.detail.find("src/b.cu"), std::string::npos);
}

TEST_F(Finder, NoCompileCommandStillFindsTheSource) {
  fs::remove(app_ / "build/compile_commands.json");
  const Result r = find("_Z4betaPi", false);
  EXPECT_EQ(r.status, Status::NoCompileCommand) << r.summary;
  EXPECT_EQ(r.tu, app_ / "src/b.cu");  // not hip/b_hip.cu, its HIP port
  EXPECT_NE(all_how(r).find("HIP"), std::string::npos) << all_how(r);
  EXPECT_NE(r.detail.find("compile_commands.json"), std::string::npos);
  EXPECT_NE(r.detail.find("bear"), std::string::npos);
}

TEST_F(Finder, DatabaseFoundInABuildDirectory) {
  const Result r = find("_Z4betaPi", false);
  ASSERT_EQ(r.status, Status::Found) << r.summary;
  EXPECT_NE(all_how(r).find("no --compile-commands given"), std::string::npos);
}

TEST_F(Finder, RuntimeGeneratedSource) {
  const Result r = find("jit_scale");
  EXPECT_EQ(r.status, Status::RuntimeGenerated) << r.summary;
  EXPECT_NE(r.detail.find("src/jit.cu"), std::string::npos) << r.detail;
  Request q;
  q.mangled = "_Z5alphaPi";
  q.image_kind = "ptx";
  q.source_dir = app_ / "include";  // not where alpha is
  EXPECT_EQ(find_source(q).status, Status::RuntimeGenerated);
}

TEST_F(Finder, WrongSourceDirectory) {
  Request q;
  q.mangled = "_Z5alphaPi";
  q.source_dir = testing::fixtures() / "nosource";
  const Result r = find_source(q);
  EXPECT_EQ(r.status, Status::NotInTree);
  EXPECT_NE(r.detail.find("--source-dir"), std::string::npos);
  // The right name in the wrong scope is pointed out.
  const Result scoped = find("_ZN2ns5alphaEPi");
  EXPECT_EQ(scoped.status, Status::NotInTree);
  EXPECT_NE(scoped.detail.find("another scope"), std::string::npos) << scoped.detail;
}

TEST_F(Finder, LibraryTritonAndNoSourceDir) {
  Request q;
  q.mangled = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
  q.source_dir = app_;
  EXPECT_EQ(find_source(q).status, Status::LibraryKernel);
  q.mangled = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT";
  EXPECT_EQ(find_source(q).status, Status::LibraryKernel);
  q.mangled = "triton_poi_fused_add_0";
  const Result t = find_source(q);
  EXPECT_EQ(t.status, Status::Triton);
  EXPECT_NE(t.detail.find("kernel_variant.py"), std::string::npos);
  Request no_dir;
  no_dir.mangled = "triton_poi_fused_add_0";
  EXPECT_EQ(find_source(no_dir).status, Status::Triton);
  q.language = Language::Triton;
  q.mangled = "_Z5alphaPi";
  EXPECT_EQ(find_source(q).status, Status::Triton);
  Request none;
  none.mangled = "_Z5alphaPi";
  EXPECT_EQ(find_source(none).status, Status::NoSourceDir);
}

TEST_F(Finder, MissingPathsAreUsageErrors) {
  Request q;
  q.mangled = "_Z5alphaPi";
  q.source_dir = app_ / "missing";
  try {
    find_source(q);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
  }
}

TEST_F(Finder, HostOnlyUnitsAreNotCandidates) {
  // host_only.cpp is compiled by c++: never the unit of a kernel.
  const Result r = find("_Z5alphaPi");
  for (const auto& c : r.candidates) EXPECT_NE(c.tu.filename(), "host_only.cpp");
}

// examples/multifile built by this build tree: real compile_commands.json and objects.
class Multifile : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = fs::path(KERNCAP_BINARY_DIR) / "compile_commands.json";
    tree_ = fs::path(KERNCAP_FIXTURES).parent_path().parent_path() / "examples/multifile";
    const fs::path obj = fs::path(KERNCAP_BINARY_DIR) / "examples/multifile/CMakeFiles/multifile_app.dir/app/pipeline.cu.o";
    if (!fs::exists(db_) || !fs::exists(obj)) GTEST_SKIP() << "examples/multifile is not built in this build tree";
  }
  Result find(const std::string& mangled) {
    Request q;
    q.mangled = mangled;
    q.source_dir = tree_;
    q.compile_commands = db_;
    return find_source(q);
  }
  fs::path db_, tree_;
};

TEST_F(Multifile, ObjectSymbolsChooseTheInstantiatingUnit) {
  const Result f = find("_ZN2mf12scale_kernelIfLi4EEEvPT_PKS1_ii");
  ASSERT_EQ(f.status, Status::Found) << f.summary << "\n" << f.detail;
  EXPECT_EQ(f.tu.filename(), "pipeline.cu");
  EXPECT_EQ(f.definition.filename(), "scale.cuh");
  EXPECT_NE(all_how(f).find("object file symbols"), std::string::npos) << all_how(f);
  const Result d = find("_ZN2mf12scale_kernelIdLi2EEEvPT_PKS1_ii");
  ASSERT_EQ(d.status, Status::Found) << d.summary;
  EXPECT_EQ(d.tu.filename(), "reduce.cu");
}

TEST_F(Multifile, EveryKernelOfTheFixture) {
  EXPECT_EQ(find("_ZN2mf8stencil3EPfPKfii").tu.filename(), "stencil.cu");
  const Result bias = find("mf_bias");
  ASSERT_EQ(bias.status, Status::Found) << bias.summary;
  EXPECT_EQ(bias.tu.filename(), "main.cu");
  EXPECT_EQ(bias.definition.filename(), "bias.cuh");
  EXPECT_EQ(find("_Z9zero_fillPdi").tu.filename(), "reduce.cu");
}

}  // namespace
}  // namespace kerncap::source
