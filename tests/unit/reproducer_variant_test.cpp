// Which image validate/replay use without --cubin.
#include <gtest/gtest.h>

#include "reproducer/variant.hpp"
#include "reproducer_fixtures.hpp"

namespace kerncap::reproducer {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

void age(const fs::path& p, std::chrono::seconds by) { fs::last_write_time(p, fs::last_write_time(p) - by); }

TEST(ReproducerVariant, NoVariantNoNote) {
  testing::Scratch s;
  testing::write_fake_capture(s.root(), "_Z1kv", "k()");
  const VariantChoice v = fresh_variant(s.root());
  EXPECT_FALSE(v.cubin);
  EXPECT_TRUE(v.note.empty());
}

TEST(ReproducerVariant, OptimizedCubinNewerThanItsSources) {
  testing::Scratch s;
  testing::write_fake_capture(s.root(), "_Z1kv", "k()");
  testing::spit(s.root() / "kernel_variant.cu", "x");
  testing::spit(s.root() / "src/a/b.cuh", "y");
  testing::spit(s.root() / "optimized.cubin", "z");
  age(s.root() / "kernel_variant.cu", 10s);
  age(s.root() / "src/a/b.cuh", 10s);
  VariantChoice v = fresh_variant(s.root() / "capture");  // OUT/capture works as well as OUT
  ASSERT_TRUE(v.cubin);
  EXPECT_EQ(*v.cubin, s.root() / "optimized.cubin");
  EXPECT_NE(v.note.find("the variant"), std::string::npos);
  fs::last_write_time(s.root() / "src/a/b.cuh", fs::last_write_time(s.root() / "optimized.cubin") + 5s);
  v = fresh_variant(s.root());
  EXPECT_FALSE(v.cubin);
  EXPECT_NE(v.note.find("src/a/b.cuh"), std::string::npos);
}

TEST(ReproducerVariant, CubinWithoutItsSourceIsNotPickedSilently) {
  testing::Scratch s;
  testing::write_fake_capture(s.root(), "_Z1kv", "k()");
  testing::spit(s.root() / "optimized.cubin", "z");
  const VariantChoice v = fresh_variant(s.root());
  EXPECT_FALSE(v.cubin);
  EXPECT_NE(v.note.find("--cubin"), std::string::npos);
}

TEST(ReproducerVariant, TritonCandidateOnlyWithTheCapturedGeometry) {
  testing::Scratch s;
  testing::write_fake_capture(s.root(), "matmul_kernel", "matmul_kernel");  // grid 4x1x1, block 256
  testing::spit(s.root() / "kernel_variant.py", "x");
  testing::spit(s.root() / "candidate.cubin", "z");
  age(s.root() / "kernel_variant.py", 10s);
  testing::spit(s.root() / "candidate.json", R"({"grid": [4, 1, 1], "block": [256, 1, 1], "shared_mem_bytes": 0})");
  EXPECT_TRUE(fresh_variant(s.root()).cubin);
  testing::spit(s.root() / "candidate.json", R"({"grid": [8, 1, 1], "block": [128, 1, 1], "shared_mem_bytes": 0})");
  const VariantChoice v = fresh_variant(s.root());
  EXPECT_FALSE(v.cubin);
  EXPECT_NE(v.note.find("geometry"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::reproducer
