// `kerncap locate` and `kerncap profile --source-repo` through the built binary, on the
// look-alike repositories of tests/fixtures/locate and the profile fixture run1.
#include <gtest/gtest.h>

#include "cli_run.hpp"
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using kerncap::test::CliRun;

CliRun kerncap(const std::string& args) {
  return kerncap::test::run_shell("timeout 20 " + std::string(KERNCAP_BINARY_DIR) + "/bin/kerncap " + args);
}

std::string fixtures() { return std::string(KERNCAP_FIXTURES); }
std::string repo(const std::string& name) { return " --source-repo " + fixtures() + "/locate/" + name; }

nlohmann::json last_json_line(const std::string& out) {
  const size_t start = out.rfind("\n{");
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

TEST(LocateCli, ProfileFromRecordsCarriesSourceAndTest) {
  const CliRun r = kerncap("profile --from " + fixtures() + "/profile/run1 --json" + repo("torchish") + repo("squareapp"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto doc = last_json_line(r.out);
  int checked = 0;
  for (const auto& k : doc["kernels"]) {
    const std::string name = k["name"];
    if (name == "_Z6squarePfi") {
      EXPECT_EQ(k["source_status"], "found");
      EXPECT_NE(k["source"].get<std::string>().find("squareapp/src/square.cu:1"), std::string::npos) << k.dump();
      EXPECT_EQ(k["test"]["command"], "cmake --build build --target test_square && ctest --test-dir build -R test_square");
      ++checked;
    } else if (name.find("CUDAFunctor_add") != std::string::npos) {
      EXPECT_NE(k["source"].get<std::string>().find("BinaryAddSubKernel.cu:4"), std::string::npos) << k.dump();
      EXPECT_EQ(k["test"]["command"], "pytest test/test_binary_ufuncs.py -k add");
      ++checked;
    } else if (name.starts_with("sm90_xmma")) {
      EXPECT_EQ(k["source_status"], "closed-source");
      EXPECT_TRUE(k["source"].is_null());
      EXPECT_NE(k["library"]["name"].get<std::string>().find("cuBLAS"), std::string::npos);
      ++checked;
    } else if (name.starts_with("triton_poi_")) {
      EXPECT_EQ(k["source_status"], "generated");
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5) << doc.dump();
}

TEST(LocateCli, ProfileTableHasASourcesSection) {
  const CliRun r = kerncap("profile --from " + fixtures() + "/profile/run1 --width 120" + repo("squareapp"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Sources:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("src/square.cu:1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("closed source: cuBLAS"), std::string::npos) << r.out;
}

TEST(LocateCli, LocateJsonAndExitCodes) {
  CliRun r = kerncap("locate _Z6squarePfi --json" + repo("squareapp"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto doc = last_json_line(r.out);
  EXPECT_EQ(doc["format"], "kerncap-locate");
  EXPECT_EQ(doc["results"][0]["status"], "found");
  EXPECT_EQ(doc["repos"][0]["files"], 2);
  // Flags first, names after: --source-repo takes one folder.
  r = kerncap("locate" + repo("squareapp") + " -q _Z6squarePfi");
  EXPECT_EQ(r.code, 0) << r.out;
  r = kerncap("locate _Z7missingPf -q" + repo("squareapp"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("not found"), std::string::npos) << r.out;
  r = kerncap("locate x --source-repo /no/such/dir");
  EXPECT_EQ(r.code, 2) << r.out;
  r = kerncap("locate x --rules " + fixtures() + "/locate/README.md");  // not TOML
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("README.md:"), std::string::npos) << r.out;
}

TEST(LocateCli, UserRulesGiveTestCommands) {
  const std::string rules = std::string(KERNCAP_BINARY_DIR) + "/locate_user_rules.toml";
  FILE* f = std::fopen(rules.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs("version = 1\n[[test]]\nfile = '^src/'\ncommand = \"make check-{kernel}\"\n", f);
  std::fclose(f);
  const CliRun r = kerncap("locate _Z6squarePfi --rules " + rules + repo("squareapp"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("make check-square"), std::string::npos) << r.out;
}

}  // namespace
