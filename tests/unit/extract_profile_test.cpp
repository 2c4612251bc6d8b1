// The messages of `kerncap profile` and the --force rule of `kerncap extract`.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "common/error.hpp"
#include "extract/capture_run.hpp"
#include "extract/profile_run.hpp"

using namespace kerncap;
using namespace kerncap::extract;
namespace fs = std::filesystem;

TEST(ExtractProfile, EmptyRecordsSayWhy) {
  EXPECT_EQ(explain_empty({}, nullptr),
            "no process of the application initialised CUDA with kerncap attached: it may not use the GPU, it may "
            "have failed before initialising CUDA, or another tool replaced CUDA_INJECTION64_PATH");
  AppExit not_found{true, 127};
  EXPECT_EQ(explain_empty({}, &not_found), "the application could not be started (see the message above)");
  AppExit crashed{false, 6};
  EXPECT_NE(explain_empty({}, &crashed).find("(it was killed by signal 6"), std::string::npos);

  format::ProcessRecords p;
  p.info.pid = 99;
  std::vector<format::ProcessRecords> one = {p};
  AppExit ok{true, 0};
  EXPECT_EQ(explain_empty(one, &ok), "the application launched no kernels (1 process initialised CUDA and exited with "
                                     "code 0)");
  one[0].errors.push_back({"cupti", "cuptiActivityEnable failed"});
  EXPECT_TRUE(explain_empty(one, &ok).starts_with("nothing was recorded: in pid 99: cuptiActivityEnable failed."));
  one[0].errors.push_back({"multiple_subscribers", "another CUPTI client is active"});
  EXPECT_EQ(explain_empty(one, &ok), "nothing was recorded: in pid 99 another CUPTI client is active");
}

TEST(ExtractProfile, NextStepNamesTheTopKernelAndTheCommand) {
  profile::Summary s;
  profile::KernelStats graph_only;
  graph_only.mangled = "_Z5graphv";
  graph_only.demangled = "graph()";
  graph_only.processes.push_back({1, 3, {}, 3});
  profile::KernelStats k;
  k.mangled = "_ZN2ns4gemmIfEEvPf";
  k.demangled = "void ns::gemm<float>(float*)";
  k.processes.push_back({1, 2, {4, 9}, 0});
  s.kernels = {k};
  s.processes.resize(1);
  AppCommand argv_cmd{"", {"./app", "--n", "1 000"}};
  EXPECT_EQ(next_step(s, argv_cmd, nullptr),
            "Next: capture the top kernel with\n  kerncap extract _ZN2ns4gemmIfEEvPf --dispatch 4 -o iso/gemm -- "
            "./app --n '1 000'\n");
  AppCommand shell{"./app | tee log", {}};
  EXPECT_NE(next_step(s, shell, nullptr).find("--cmd './app | tee log'"), std::string::npos);
  s.kernels = {graph_only, k};
  EXPECT_EQ(next_step(s, argv_cmd, nullptr),
            "The top kernel ran only from device-side graph launches, which `extract --dispatch` cannot target.\n");
  std::regex only_gemm("gemm");
  EXPECT_NE(next_step(s, argv_cmd, &only_gemm).find("--dispatch 4"), std::string::npos);
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(ExtractOutput, ForceRemovesOnlyWhatExtractWrote) {
  fs::path out = fs::temp_directory_path() / ("kerncap-force-test-" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out / "capture");
  fs::create_directories(out / "capture.partial-12");
  fs::create_directories(out / "src");
  std::ofstream(out / "kernel_variant.cu") << "edited";
  std::ofstream(out / "candidate.cubin") << "x";
  std::ofstream(out / "notes.txt") << "mine";
  try {
    prepare_output(out, false);
    ADD_FAILURE() << "a non-empty OUT was accepted without --force";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("pass --force"), std::string::npos);
  }
  prepare_output(out, true);
  EXPECT_FALSE(fs::exists(out / "capture"));
  EXPECT_FALSE(fs::exists(out / "capture.partial-12"));
  EXPECT_FALSE(fs::exists(out / "candidate.cubin"));
  EXPECT_TRUE(fs::exists(out / "kernel_variant.cu"));
  EXPECT_TRUE(fs::exists(out / "src"));
  EXPECT_TRUE(fs::exists(out / "notes.txt"));
  EXPECT_TRUE(fs::is_directory(out / ".kerncap"));
  fs::remove_all(out);
}
