// `kerncap locate` for Triton kernels whose tests reach them through several modules, on the
// look-alike package tests/fixtures/locate/tkern2 (laid out as triton_kernels is): the kernel
// launched from the module that imports it, an autograd class, a public function, a module
// that calls that, and tests importing over several lines.
#include <gtest/gtest.h>

#include <filesystem>

#include "source/locate.hpp"
#include "source/locate_output.hpp"

namespace kerncap::source {
namespace {

namespace fs = std::filesystem;

LocateResult find(const std::string& name) {
  std::vector<RepoIndex> repos;
  repos.push_back(build_index(fs::path(KERNCAP_FIXTURES) / "locate" / "tkern2"));
  Locator loc(load_locate_rules({}), std::move(repos));
  return loc.locate(name, {});
}

TEST(LocateTriton, TestsFoundThroughTheCallersChain) {
  // _topk_forward -> topk_forward (topk.py, which imports it) -> TopK -> topk -> routing
  const auto r = find("_topk_forward");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  ASSERT_FALSE(r.sources.empty());
  EXPECT_EQ(r.sources.front().file, "triton_kernels/topk_details/_topk_forward.py");
  EXPECT_EQ(r.sources.front().line, 5u);
  ASSERT_FALSE(r.tests.empty()) << format_locate(r);
  // test_routing.py imports routing and is named after a module on the way; test_matmul.py
  // imports it too, test_other.py only names the kernel in a comment.
  EXPECT_EQ(r.tests.front().file, "tests/test_routing.py") << format_locate(r);
  EXPECT_EQ(r.test_command, "pytest tests/test_routing.py -k routing");
}

TEST(LocateTriton, KernelChosenInAConditionalAndAMultiLineImport) {
  // mxfp.py launches (_downcast_to_mxfp if ... else ...)[grid](...); test_mxfp.py imports
  // downcast_to_mxfp inside `from ... import (...)` over several lines.
  const auto r = find("_downcast_to_mxfp");
  ASSERT_EQ(r.status, LocateStatus::Found) << format_locate(r);
  ASSERT_FALSE(r.tests.empty()) << format_locate(r);
  EXPECT_EQ(r.tests.front().file, "tests/test_mxfp.py") << format_locate(r);
  for (const auto& t : r.tests) EXPECT_NE(t.file, "tests/test_other.py");
}

}  // namespace
}  // namespace kerncap::source
