// A bad command line is a usage error, exit 2, whether kerncap or CLI11 (a value out of range,
// an unknown option or command, a missing argument) finds it; --help is exit 0.
#include <gtest/gtest.h>

#include <string>

#include "cli_run.hpp"

namespace {

const std::string kc = std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap";

TEST(CliUsageExit, EveryBadCommandLineIsExitTwo) {
  for (const char* args : {"validate /nonexistent --fuzz 200000", "validate /nonexistent --no-such-flag", "no-such-command",
                           "validate", "extract foo --regimes --max-regimes 0 -o /tmp/x -- /bin/true"}) {
    const auto r = kerncap::test::run_shell(kc + " " + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_FALSE(r.out.empty()) << args;  // and says why
  }
  EXPECT_EQ(kerncap::test::run_shell(kc + " --help").code, 0);
  EXPECT_EQ(kerncap::test::run_shell(kc + " validate --help").code, 0);
}

}  // namespace
