// What `kerncap extract` tells the user when nothing was captured, and the refusal of a
// library that speaks another protocol; fed with event lines, no GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "extract/diagnose.hpp"
#include "format/out_layout.hpp"
#include "format/protocol.hpp"

using namespace kerncap;
using namespace kerncap::extract;
namespace fs = std::filesystem;
namespace events = kerncap::format::events;

namespace {

events::Log log_of(std::initializer_list<nlohmann::json> lines) {
  events::Log log;
  for (const auto& j : lines) events::add_line(log, j.dump());
  return log;
}

AppExit exited(int code) { return {true, code}; }
AppExit killed(int sig) { return {false, sig}; }

const Target kTarget{"vectorAdd", 0};

}  // namespace

TEST(ExtractDiagnose, NoStartEvent) {
  std::string m = diagnose(kTarget, {}, exited(0));
  EXPECT_EQ(m, "the application exited with code 0 and never initialised CUDA with kerncap attached (it may not use "
               "the GPU, may have failed to start, or CUDA_INJECTION64_PATH was overridden)");
}

TEST(ExtractDiagnose, ApplicationThatCouldNotStart) {
  EXPECT_EQ(diagnose(kTarget, {}, exited(127)), "the application could not be started (see the message above)");
}

TEST(ExtractDiagnose, NoKernels) {
  auto log = log_of({events::start("capture")});
  EXPECT_EQ(diagnose(kTarget, log, exited(0)), "the application exited with code 0 without launching any kernel");
}

TEST(ExtractDiagnose, KernelsButNoMatchListsClosestNames) {
  auto log = log_of({events::start("capture"), events::seen("_Z9vectorSubPf", "vectorSub(float*)", false),
                     events::seen("_Z4gemmv", "gemm()", false)});
  std::string m = diagnose(kTarget, log, exited(0));
  EXPECT_TRUE(m.starts_with("no launched kernel matches 'vectorAdd'; the application exited with code 0 (2 distinct "
                            "kernels seen). Closest names:\n  vectorSub(float*)"))
      << m;
}

TEST(ExtractDiagnose, MatchingKernelsLoadedButNeverLaunchedFromTheHost) {
  auto log = log_of({events::start("capture"), events::seen("_Z6parentPf", "parent(float*)", false),
                     events::unlaunched("_Z9vectorAddPf", "vectorAdd(float*)")});
  const std::string m = diagnose(kTarget, log, exited(0));
  EXPECT_TRUE(m.starts_with("no launched kernel matches 'vectorAdd'; the application exited with code 0. The "
                            "application loaded code that holds matching kernels, but the host never launched them"))
      << m;
  EXPECT_NE(m.find("dynamic parallelism"), std::string::npos) << m;
  EXPECT_NE(m.find("\n  vectorAdd(float*)"), std::string::npos) << m;
  // Once a launch matched, the report does not apply (a later dispatch was asked).
  events::add_line(log, events::match(0, "_Z9vectorAddPf").dump());
  EXPECT_TRUE(diagnose({"vectorAdd", 3}, log, exited(0)).starts_with("'vectorAdd' matched only 1 launch(es)"));
}

TEST(ExtractDiagnose, FewerMatchesThanDispatch) {
  auto log = log_of({events::start("capture"), events::seen("_Z9vectorAddPf", "vectorAdd(float*)", true),
                     events::match(0, "_Z9vectorAddPf"), events::match(1, "_Z9vectorAddPf")});
  EXPECT_EQ(diagnose({"vectorAdd", 5}, log, exited(0)),
            "'vectorAdd' matched only 2 launch(es) but --dispatch 5 asks for launch #5 (counting from 0); the "
            "application exited with code 0");
}

TEST(ExtractDiagnose, TargetReachedButTheApplicationCrashed) {
  auto log = log_of({events::start("capture"), events::seen("_Z9vectorAddPf", "vectorAdd(float*)", true),
                     events::match(0, "_Z9vectorAddPf")});
  std::string m = diagnose(kTarget, log, killed(11));
  EXPECT_TRUE(m.starts_with("the target launch of 'vectorAdd' was reached but the capture did not complete: the "
                            "application was killed by signal 11"))
      << m;
  // It was killed after the target launch was reached, while the capture was being written
  // (issue 33: the message said "before the target launch", contradicting itself).
  EXPECT_NE(m.find("after the target launch was reached, while its capture"), std::string::npos) << m;
  EXPECT_EQ(m.find("before the target launch"), std::string::npos) << m;
  // Killed with no match yet: before the target launch.
  auto early = log_of({events::start("capture"), events::seen("_Z9vectorAddPf", "vectorAdd(float*)", true)});
  m = diagnose(Target{"vectorAdd", 3}, early, killed(9));
  EXPECT_NE(m.find("killed by signal 9"), std::string::npos) << m;
  EXPECT_NE(m.find("before the target launch"), std::string::npos) << m;
}

TEST(ExtractDiagnose, ErrorsFromTheLibraryComeFirst) {
  auto log = log_of({events::start("capture"), events::seen("_Z9vectorAddPf", "vectorAdd(float*)", true),
                     events::match(0, "_Z9vectorAddPf"), events::error("writing mem/3.bin failed (disk full?)"),
                     events::error("second")});
  EXPECT_EQ(diagnose(kTarget, log, exited(3)),
            "the capture failed inside the application: writing mem/3.bin failed (disk full?)\n  also: second\n(the "
            "application exited with code 3)");
}

TEST(ExtractDiagnose, GraphCaptureSkipsAndGraphLaunchesAreNoted) {
  auto log = log_of({events::start("capture"), events::seen("_Z9vectorAddPf", "vectorAdd(float*)", true),
                     events::skipped("_Z9vectorAddPf", events::SkipReason::CapturingStream),
                     events::skipped("_Z9vectorAddPf", events::SkipReason::CapturingStream), events::graph_launch()});
  std::string m = diagnose(kTarget, log, exited(0));
  EXPECT_NE(m.find("\n2 matching launch(es) were not counted (recorded into a CUDA graph being captured"),
            std::string::npos)
      << m;
  EXPECT_TRUE(m.ends_with("\nnote: the application launched CUDA graphs kerncap did not see instantiated; their "
                          "kernels are not seen"))
      << m;
}

TEST(ExtractProtocol, SameProtocolPasses) {
  auto log = log_of({events::start("capture")});
  EXPECT_FALSE(protocol_mismatch(log, "/lib/libkerncap.so"));
  EXPECT_FALSE(protocol_mismatch({}, "/lib/libkerncap.so"));  // nothing started: diagnose() speaks
}

TEST(ExtractProtocol, AStaleLibraryIsRefusedFromItsEventsFile) {
  // A library of another build wrote this file (read the way extract reads OUT/.kerncap).
  fs::path out = fs::temp_directory_path() / ("kerncap-protocol-test-" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(format::out::state_dir(out));
  {
    std::ofstream f(format::out::events_file(out, 4242));
    nlohmann::json start = events::start("capture");
    start["protocol"] = format::kProtocolVersion + 1;
    start["tool"] = "9.9.9";
    start["pid"] = 4242;
    f << start.dump() << "\n" << events::seen("_Z1kv", "k()", true).dump() << "\n";
  }
  auto log = events::read_dir(format::out::state_dir(out));
  fs::remove_all(out);
  auto why = protocol_mismatch(log, "/opt/old/lib/libkerncap.so");
  ASSERT_TRUE(why);
  EXPECT_TRUE(why->starts_with(fmt::format("libkerncap.so at /opt/old/lib/libkerncap.so speaks protocol {} (kerncap "
                                           "9.9.9), this kerncap speaks {}",
                                           format::kProtocolVersion + 1, format::kProtocolVersion)))
      << *why;
  EXPECT_NE(why->find("KERNCAP_LIBRARY"), std::string::npos) << *why;
  try {
    check_protocol(log, "/opt/old/lib/libkerncap.so");
    FAIL() << "a mismatched library was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_EQ(std::string(e.what()), *why);
  }
}

TEST(ExtractProtocol, ALibraryWithoutVersionedEventsIsRefused) {
  auto log = log_of({{{"event", "start"}, {"mode", "capture"}, {"pid", 1}}});
  auto why = protocol_mismatch(log, "/x/libkerncap.so");
  ASSERT_TRUE(why);
  EXPECT_TRUE(why->starts_with("libkerncap.so at /x/libkerncap.so speaks protocol 0 (an older kerncap, before "
                               "versioned events)"))
      << *why;
}

TEST(ExtractDiagnose, ATargetOnlyInAGraphNeverLaunchedIsSaidSo) {
  auto log = log_of({events::start("capture"), events::seen("_Z5otherv", "other()", false),
                     events::skipped("_Z9vectorAddPf", events::SkipReason::CapturingStream),
                     events::skipped("_Z9vectorAddPf", events::SkipReason::UnlaunchedGraph)});
  std::string m = diagnose(kTarget, log, exited(0));
  EXPECT_TRUE(m.starts_with("no launched kernel matches 'vectorAdd': it was seen only as a node of a CUDA graph that "
                            "was instantiated but never launched, so it never ran"))
      << m;
  EXPECT_NE(m.find("\n  vectorAdd(float*)"), std::string::npos) << m;
  // No kernel launched at all: still the graph's story, not "without launching any kernel".
  auto only = log_of({events::start("capture"), events::skipped("_Z9vectorAddPf", events::SkipReason::UnlaunchedGraph)});
  EXPECT_NE(diagnose(kTarget, only, exited(0)).find("never launched"), std::string::npos);
}

TEST(ExtractDiagnose, AGraphLaunchedIntoACapturingStreamIsSaidSo) {
  auto log = log_of({events::start("capture"), events::seen("_Z5otherv", "other()", false),
                     events::skipped("_Z9vectorAddPf", events::SkipReason::NestedGraph)});
  std::string m = diagnose(kTarget, log, exited(0));
  EXPECT_NE(m.find("it was seen only inside a CUDA graph that was launched on a stream being captured into another "
                   "graph"),
            std::string::npos)
      << m;
  // The driver may refuse such a launch (cudaErrorStreamCaptureUnsupported): the message must not claim it ran.
  EXPECT_NE(m.find("or refuses it"), std::string::npos) << m;
  EXPECT_EQ(m.find("it ran only"), std::string::npos) << m;
  EXPECT_EQ(m.find("matching launch(es) were not counted"), std::string::npos) << m;
}
