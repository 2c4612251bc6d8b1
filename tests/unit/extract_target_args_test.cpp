// `kerncap extract`'s target arguments (extract/target_args.hpp): KERNEL, repeatable
// --kernel, --top N --from profile.json (tests/fixtures/extract/profile_top3.json),
// --dispatch and --regex, and each refusal as a typed error with a clear message. No GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "common/error.hpp"
#include "extract/target_args.hpp"
#include "extract/targets.hpp"

using namespace kerncap;
using namespace kerncap::extract;
using format::MatchKind;

namespace {

const std::string kProfile = std::string(KERNCAP_FIXTURES) + "/extract/profile_top3.json";

// The error's message, checking its kind; "" (and a failure) when nothing was thrown.
std::string error_of(ErrorKind kind, const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a kerncap error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string usage(const TargetArgs& a) {
  return error_of(ErrorKind::Usage, [&] { collect_targets(a); });
}
std::string input(const TargetArgs& a) {
  return error_of(ErrorKind::Input, [&] { collect_targets(a); });
}

TargetArgs kernels(std::vector<std::string> ks) {
  TargetArgs a;
  a.kernels = std::move(ks);
  return a;
}

TargetArgs top(uint64_t n, std::string from = kProfile) {
  TargetArgs a;
  a.top = n;
  a.from = std::move(from);
  return a;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(ExtractTargetArgs, OnePositionalKernelIsOneTarget) {
  TargetArgs a;
  a.positional = "vectorAdd";
  a.dispatch = 3;
  CollectedTargets c = collect_targets(a);
  ASSERT_EQ(c.targets.size(), 1u);
  EXPECT_EQ(c.targets[0].kernel, "vectorAdd");
  EXPECT_EQ(c.targets[0].dispatch, 3u);
  EXPECT_EQ(c.targets[0].match, MatchKind::Substring);
  EXPECT_FALSE(c.app_first_word);
  EXPECT_TRUE(c.notes.empty());
}

TEST(ExtractTargetArgs, SeveralKernelsKeepTheirOrderAndDispatch) {
  TargetArgs a = kernels({"layer_norm", "gemm@1", "softmax"});
  a.dispatch = 2;
  a.regex = true;
  CollectedTargets c = collect_targets(a);
  ASSERT_EQ(c.targets.size(), 3u);
  EXPECT_EQ(c.targets[0].kernel, "layer_norm");
  EXPECT_EQ(c.targets[0].dispatch, 2u);  // --dispatch for a pattern without @N
  EXPECT_EQ(c.targets[1].kernel, "gemm");
  EXPECT_EQ(c.targets[1].dispatch, 1u);  // its own @N wins
  EXPECT_EQ(c.targets[2].dispatch, 2u);
  for (const auto& t : c.targets) EXPECT_EQ(t.match, MatchKind::Regex);
  // Each gets its own directory, numbered in this order.
  EXPECT_EQ(target_dir_name(0, c.targets[0]), "00-layer_norm");
  EXPECT_EQ(target_dir_name(1, c.targets[1]), "01-gemm");
  EXPECT_EQ(target_dir_name(2, c.targets[2]), "02-softmax");
}

TEST(ExtractTargetArgs, WithOptionsThePositionalWordIsTheApplications) {
  // `extract --kernel k -o OUT -- ./app arg`: CLI11 puts ./app where KERNEL goes.
  TargetArgs a = kernels({"k"});
  a.positional = "./app";
  CollectedTargets c = collect_targets(a);
  ASSERT_EQ(c.targets.size(), 1u);
  EXPECT_EQ(c.targets[0].kernel, "k");
  ASSERT_TRUE(c.app_first_word);
  EXPECT_EQ(*c.app_first_word, "./app");
  // With --cmd there is no application word to give back: the positional is a mistake.
  a.has_cmd = true;
  const std::string m = usage(a);
  EXPECT_TRUE(has(m, "give it as --kernel './app'")) << m;
}

TEST(ExtractTargetArgs, TopFromAProfileTakesExactNamesInRankOrder) {
  CollectedTargets c = collect_targets(top(2));
  ASSERT_EQ(c.targets.size(), 2u);
  EXPECT_EQ(c.targets[0].kernel, "_ZN2at6native13reduce_kernelILi512ELi1EEEvv");
  EXPECT_EQ(c.targets[0].match, MatchKind::Exact);
  EXPECT_EQ(c.targets[0].dispatch, 0u);
  EXPECT_EQ(c.targets[0].label, "void at::native::reduce_kernel<512, 1>()");
  EXPECT_EQ(c.targets[1].kernel, "_Z9layerNormPfi");
  EXPECT_EQ(target_dir_name(0, c.targets[0]), "00-reduce_kernel");
  EXPECT_EQ(target_dir_name(1, c.targets[1]), "01-layerNorm");
  EXPECT_TRUE(c.notes.empty());
}

TEST(ExtractTargetArgs, KernelsAndTopCombineKernelsFirst) {
  TargetArgs a = top(3);
  a.kernels = {"layerNorm", "softmax@4"};
  CollectedTargets c = collect_targets(a);
  ASSERT_EQ(c.targets.size(), 5u);
  EXPECT_EQ(c.targets[0].kernel, "layerNorm");
  EXPECT_EQ(c.targets[0].match, MatchKind::Substring);  // not the same target as the exact _Z9layerNormPfi
  EXPECT_EQ(c.targets[1].dispatch, 4u);
  EXPECT_EQ(c.targets[4].kernel, "triton_poi_fused_add_0");
  EXPECT_EQ(target_dir_name(4, c.targets[4]), "04-triton_poi_fused_add_0");
}

TEST(ExtractTargetArgs, TopLargerThanTheProfileTakesAllWithANote) {
  CollectedTargets c = collect_targets(top(10));
  EXPECT_EQ(c.targets.size(), 3u);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_TRUE(has(c.notes[0], "lists 3 kernel(s), fewer than --top 10")) << c.notes[0];
}

TEST(ExtractTargetArgs, TopOutOfRangeIsRefused) {
  std::string m = usage(top(0));
  EXPECT_TRUE(has(m, "--top 0: give between 1 and 64 kernels")) << m;
  m = usage(top(format::kMaxTargets + 1));
  EXPECT_TRUE(has(m, "--top 65")) << m;
}

TEST(ExtractTargetArgs, TopAndFromGoTogether) {
  TargetArgs a;
  a.top = 3;
  EXPECT_TRUE(has(usage(a), "--top N and --from profile.json go together"));
  a = TargetArgs{};
  a.from = kProfile;
  EXPECT_TRUE(has(usage(a), "--top N and --from profile.json go together"));
}

TEST(ExtractTargetArgs, MissingOrBadProfilesAreInputErrors) {
  std::string m = input(top(3, "/nonexistent/profile.json"));
  EXPECT_TRUE(has(m, "/nonexistent/profile.json")) << m;
  const auto dir = std::filesystem::path(testing::TempDir()) / "kerncap_target_args";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  m = input(top(3, write("empty.json", R"({"format":"kerncap-profile","version":1,"kernels":[]})")));
  EXPECT_TRUE(has(m, "lists no kernel")) << m;
  m = input(top(3, write("trunc.json", R"({"format":"kerncap-profile","version":1,"kernels":[)")));
  EXPECT_TRUE(has(m, "trunc.json")) << m;
  m = input(top(3, write("newer.json", R"({"format":"kerncap-profile","version":9,"kernels":[]})")));
  EXPECT_TRUE(has(m, "version")) << m;
  // A directory is not a profile.
  m = input(top(3, dir.string()));
  EXPECT_FALSE(m.empty());
}

TEST(ExtractTargetArgs, NoTargetIsRefused) {
  EXPECT_TRUE(has(usage(TargetArgs{}), "name the kernel to capture"));
}

TEST(ExtractTargetArgs, EmptyOrOversizedPatternsAreRefused) {
  EXPECT_TRUE(has(usage(kernels({"a", "@3"})), "names no kernel"));
  EXPECT_TRUE(has(usage(kernels({"k@99999999999999999999999"})), "too large"));
}

TEST(ExtractTargetArgs, DuplicateTargetsAreRefused) {
  EXPECT_FALSE(usage(kernels({"a", "b", "a"})).empty());
  // The same pattern at two dispatches is two targets.
  EXPECT_EQ(collect_targets(kernels({"a@0", "a@1"})).targets.size(), 2u);
  // An explicit @N equal to --dispatch is the same target as the bare pattern.
  TargetArgs a = kernels({"a", "a@2"});
  a.dispatch = 2;
  EXPECT_FALSE(usage(a).empty());
}

TEST(ExtractTargetArgs, DispatchThatNoTargetUsesIsRefused) {
  TargetArgs a = top(2);
  a.dispatch = 3;
  std::string m = usage(a);
  EXPECT_TRUE(has(m, "--dispatch 3 applies to KERNEL and to --kernel patterns without @N")) << m;
  a = kernels({"a@1", "b@2"});
  a.dispatch = 5;
  EXPECT_TRUE(has(usage(a), "--dispatch 5"));
  // Used by one pattern: fine, even beside --top.
  a = top(1);
  a.kernels = {"a"};
  a.dispatch = 5;
  EXPECT_EQ(collect_targets(a).targets[0].dispatch, 5u);
  // Not given: nothing to refuse.
  EXPECT_EQ(collect_targets(top(1)).targets.size(), 1u);
}
