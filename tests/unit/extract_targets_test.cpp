// Several targets in one run, offline side: --kernel PATTERN@N, the capture directories'
// names, duplicate targets, the index file, and the --top N --from profile.json reader
// (untrusted input: bad files are refused with the field named). No GPU.
#include <gtest/gtest.h>

#include <functional>

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/profile_targets.hpp"
#include "extract/targets.hpp"

using namespace kerncap;
using namespace kerncap::extract;
using format::MatchKind;

namespace {

std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string profile(const std::string& kernels, int version = 1) {
  return fmt::format(R"({{"format":"kerncap-profile","version":{},"kernels":[{}]}})", version, kernels);
}

std::string kernel(int rank, const std::string& name, const std::string& demangled = "k()") {
  return fmt::format(R"({{"rank":{},"name":"{}","demangled":"{}","in_graph":false,"total_ns":5}})", rank, name,
                     demangled);
}

}  // namespace

TEST(ExtractTargets, KernelArgumentsTakeAnOptionalDispatch) {
  auto t = parse_kernel_arg("gemm", 4, false);
  EXPECT_EQ(t.kernel, "gemm");
  EXPECT_EQ(t.dispatch, 4u);  // --dispatch is the default
  EXPECT_EQ(t.match, MatchKind::Substring);
  t = parse_kernel_arg("gemm@12", 4, true);
  EXPECT_EQ(t.kernel, "gemm");
  EXPECT_EQ(t.dispatch, 12u);
  EXPECT_EQ(t.match, MatchKind::Regex);
  t = parse_kernel_arg("a@b", 0, false);  // not digits: part of the pattern
  EXPECT_EQ(t.kernel, "a@b");
  t = parse_kernel_arg("x@12@0", 0, false);  // a pattern ending in @digits
  EXPECT_EQ(t.kernel, "x@12");
  EXPECT_EQ(t.dispatch, 0u);
  EXPECT_THROW(parse_kernel_arg("@3", 0, false), Error);
  EXPECT_THROW(parse_kernel_arg("k@99999999999999999999999", 0, false), Error);
}

TEST(ExtractTargets, DirectoryNamesAreSafeStableAndUnique) {
  EXPECT_EQ(safe_name("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, "
                      "at::native::FillFunctor<float>)"),
            "vectorized_elementwise_kernel");
  EXPECT_EQ(safe_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(safe_name("../../etc/passwd"), "etc_passwd");
  EXPECT_EQ(safe_name("gemm.*nt$"), "gemm._nt");
  EXPECT_EQ(safe_name("///"), "kernel");
  EXPECT_EQ(safe_name(std::string(300, 'a')).size(), 40u);
  TargetRequest t{"scale", MatchKind::Substring, 0, "scale"};
  EXPECT_EQ(target_dir_name(0, t), "00-scale");
  EXPECT_EQ(target_dir_name(12, t), "12-scale");  // the same name twice differs by its index
}

TEST(ExtractTargets, DuplicateTargetsAreRefused) {
  std::vector<TargetRequest> ts = {{"a", MatchKind::Substring, 0, "a"}, {"a", MatchKind::Substring, 1, "a"}};
  EXPECT_NO_THROW(check_targets(ts));
  ts.push_back({"a", MatchKind::Substring, 0, "a"});
  EXPECT_THROW(check_targets(ts), Error);
  std::vector<TargetRequest> many(format::kMaxTargets + 1);
  for (size_t i = 0; i < many.size(); ++i) many[i] = {"k", MatchKind::Substring, i, "k"};
  EXPECT_THROW(check_targets(many), Error);
}

TEST(ExtractTargets, TheIndexListsEveryTarget) {
  std::vector<TargetOutcome> o(2);
  o[0] = {{"scale", MatchKind::Substring, 1, "scale"}, "00-scale", true, "scale(float*, int)", 7, ""};
  o[1] = {{"nope", MatchKind::Regex, 0, "nope"}, "01-nope", false, "", 0, "no launched kernel matches 'nope'"};
  auto j = targets_index(o, "exited with code 0");
  EXPECT_EQ(j["format"], "kerncap-targets");
  EXPECT_EQ(j["version"], 1);
  ASSERT_EQ(j["targets"].size(), 2u);
  EXPECT_EQ(j["targets"][0]["dir"], "00-scale");
  EXPECT_EQ(j["targets"][0]["captured"], true);
  EXPECT_EQ(j["targets"][0]["launch_index"], 7);
  EXPECT_EQ(j["targets"][1]["match"], "regex");
  EXPECT_EQ(j["targets"][1]["captured"], false);
  EXPECT_EQ(j["targets"][1]["why"], "no launched kernel matches 'nope'");
}

TEST(ExtractTargets, TopKernelsComeInRankOrder) {
  auto top = top_kernels(profile(kernel(2, "_Z1bv", "b()") + "," + kernel(1, "_Z1av", "a()") + "," + kernel(3, "_Z1cv")),
                         2, "p.json");
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].mangled, "_Z1av");
  EXPECT_EQ(top[0].demangled, "a()");
  EXPECT_EQ(top[1].mangled, "_Z1bv");
  EXPECT_EQ(top_kernels(profile(kernel(1, "_Z1av")), 5, "p.json").size(), 1u);  // fewer than asked
  EXPECT_TRUE(top_kernels(profile(""), 5, "p.json").empty());
}

TEST(ExtractTargets, BadProfilesAreRefused) {
  auto bad = [](const std::string& text) { return input_error_of([&] { top_kernels(text, 3, "p.json"); }); };
  EXPECT_NE(bad("not json").find("profile p.json"), std::string::npos);
  EXPECT_NE(bad("[]").find("profile p.json"), std::string::npos);
  EXPECT_NE(bad(R"({"format":"kerncap-trace","version":1,"kernels":[]})").find("format"), std::string::npos);
  EXPECT_NE(bad(profile("", 2)).find("version"), std::string::npos);
  EXPECT_NE(bad(R"({"format":"kerncap-profile","version":1})").find("kernels"), std::string::npos);
  EXPECT_NE(bad(profile(R"({"rank":1})")).find("name"), std::string::npos);
  EXPECT_NE(bad(profile(R"({"rank":1,"name":""})")).find("name"), std::string::npos);
  EXPECT_NE(bad(profile(R"({"rank":1,"name":7})")).find("name"), std::string::npos);
  EXPECT_NE(bad(profile(R"({"rank":-1,"name":"_Z1av"})")).find("rank"), std::string::npos);
  EXPECT_NE(bad(profile(R"({"rank":1.5,"name":"_Z1av"})")).find("rank"), std::string::npos);
  EXPECT_NE(bad(profile(R"({"rank":true,"name":"_Z1av"})")).find("rank"), std::string::npos);
  EXPECT_NE(bad(profile(R"({"rank":1,"name":"_Z1av","in_graph":"yes"})")).find("in_graph"), std::string::npos);
  EXPECT_NE(bad(profile(kernel(1, "_Z1av") + "," + kernel(1, "_Z1bv"))).find("rank"), std::string::npos);
  EXPECT_NE(bad(profile(kernel(1, "_Z1av") + "," + kernel(2, "_Z1av"))).find("repeats"), std::string::npos);
  EXPECT_NE(bad(profile(R"("x")")).find("kernels[0]"), std::string::npos);
  EXPECT_NE(bad(std::string(100, '[') + std::string(100, ']')).find("profile p.json"), std::string::npos);
  // A missing file is an input error too.
  input_error_of([] { top_kernels_from_file("/nonexistent/profile.json", 3); });
}
