// extract's Triton step (extract/triton_step.hpp): the generator is told on its command line
// which exit code means "not a Triton kernel" (the one definition is in triton_step.cpp),
// and extract stays quiet on exactly that code. A stand-in interpreter plays the generator.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "extract/triton_step.hpp"
#include "format/out_layout.hpp"

using namespace kerncap;
using namespace kerncap::extract;
namespace fs = std::filesystem;

namespace {

class TritonStep : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kerncap_triton_step_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    out_ = dir_ / "out";
    fs::create_directories(format::out::triton_dir(out_) / format::out::kTritonRecords);
    std::ofstream(format::out::triton_dir(out_) / format::out::kTritonRecords / "r.json") << "{}";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A stand-in "python3" that records its arguments and exits with `exit_with` (a number, or
  // "given": the code after --not-triton-exit).
  HostEnv fake_python(const std::string& exit_with) {
    const fs::path py = dir_ / ("python-" + exit_with);
    std::ofstream(py) << "#!/bin/sh\necho \"$@\" > '" << (dir_ / "args").string() << "'\n"
                      << (exit_with == "given"
                              ? "while [ $# -gt 0 ]; do [ \"$1\" = --not-triton-exit ] && exit \"$2\"; shift; done\nexit 99\n"
                              : "exit " + exit_with + "\n");
    fs::permissions(py, fs::perms::owner_all);
    HostEnv h;
    h.python = py.string();
    h.python_dir = dir_.string();
    return h;
  }
  std::string args() {
    std::ifstream f(dir_ / "args");
    std::string s;
    std::getline(f, s);
    return s;
  }
  std::string run(const HostEnv& h) {
    ::testing::internal::CaptureStderr();
    write_triton_reproducer(out_, false, h);
    return ::testing::internal::GetCapturedStderr();
  }

  fs::path dir_, out_;
};

}  // namespace

TEST_F(TritonStep, TheGeneratorIsGivenItsNotTritonCodeAndThatCodeIsQuiet) {
  const std::string err = run(fake_python("given"));
  EXPECT_NE(args().find("-m kerncap.triton_repro --auto --not-triton-exit "), std::string::npos) << args();
  EXPECT_NE(args().find(out_.string()), std::string::npos) << args();
  EXPECT_EQ(err, "") << err;  // the generator's own note is all that is said
}

TEST_F(TritonStep, ADeviceErrorIsNeverTakenForNotTriton) {
  // 3 is the engine's device error: it must be reported, not swallowed.
  const std::string err = run(fake_python("3"));
  EXPECT_NE(err.find("no Triton reproducer: the generator exited with code 3"), std::string::npos) << err;
  EXPECT_NE(run(fake_python("2")).find("no Triton reproducer"), std::string::npos);
}

TEST_F(TritonStep, ASuccessIsSaid) {
  EXPECT_NE(run(fake_python("0")).find("wrote the Triton reproducer"), std::string::npos);
}

TEST_F(TritonStep, NoRecordsNoGenerator) {
  fs::remove_all(format::out::triton_dir(out_));
  EXPECT_EQ(run(fake_python("0")), "");
  EXPECT_FALSE(fs::exists(dir_ / "args"));
}
