// The resources lint reports equal what the toolkit's `cuobjdump -res-usage` prints, for
// every kernel of every fixture cubin (REG = registers, STACK = local memory per thread,
// SHARED = static shared memory plus the 1 KiB the system reserves on sm_90+). Skipped
// where cuobjdump is not installed.
#include <gtest/gtest.h>

#include <regex>

#include "cubin/cubin.hpp"
#include "lint_fixtures.hpp"

namespace kerncap::lint {
namespace {

struct ResUsage {
  int reg = -1, stack = -1, shared = -1;
};

std::map<std::string, ResUsage> res_usage(const std::string& tool, const std::string& file) {
  const auto r = run_tool({tool, "-res-usage", file});
  EXPECT_TRUE(r && r->status == 0) << file;
  std::map<std::string, ResUsage> out;
  if (!r) return out;
  static const std::regex fn(R"(^ Function (\S+):$)"), res(R"(REG:(\d+) STACK:(\d+) SHARED:(\d+))");
  std::string current;
  size_t pos = 0;
  while (pos < r->out.size()) {
    size_t nl = r->out.find('\n', pos);
    if (nl == std::string::npos) nl = r->out.size();
    const std::string line = r->out.substr(pos, nl - pos);
    pos = nl + 1;
    std::smatch m;
    if (std::regex_search(line, m, fn)) current = m[1];
    else if (!current.empty() && std::regex_search(line, m, res))
      out[current] = {std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3])};
  }
  return out;
}

std::string find_cuobjdump() {
  static const std::string built = std::string(KERNCAP_BINARY_DIR) + "/bin/cuobjdump";  // from install-deps
  for (const char* p : {built.c_str(), "cuobjdump", "/usr/local/cuda/bin/cuobjdump"}) {
    const auto r = run_tool({p, "--version"});
    if (r && r->status == 0) return p;
  }
  return "";
}

TEST(LintResUsage, EqualsCuobjdumpForEveryFixtureCubin) {
  KC_NEED_FIXTURES();
  const std::string tool = find_cuobjdump();
  if (tool.empty()) GTEST_SKIP() << "no cuobjdump on PATH or in /usr/local/cuda/bin";
  int compared = 0;
  for (const char* name : {"kernels_sm80.cubin", "kernels_sm90.cubin", "kernels_sm90a.cubin", "kernels_sm100.cubin",
                           "cluster_sm90.cubin", "rdc_sm90.cubin", "lint_sm90.cubin"}) {
    const std::string path = std::string(cubin::testing::kFixtureDir) + "/" + name;
    const cubin::Image img = cubin::parse_cubin(cubin::testing::fixture(name));
    const auto usage = res_usage(tool, path);
    for (const cubin::KernelInfo& k : img.kernels) {
      SCOPED_TRACE(std::string(name) + " " + k.name);
      ASSERT_EQ(usage.count(k.name), 1u);
      const ResUsage& u = usage.at(k.name);
      EXPECT_EQ(k.registers, u.reg);
      EXPECT_EQ(std::max(k.local_bytes, 0), u.stack);
      EXPECT_EQ(std::max(k.shared_static_bytes, 0) + k.shared_reserved_bytes, u.shared);
      ++compared;
    }
  }
  EXPECT_GE(compared, 40);
}

}  // namespace
}  // namespace kerncap::lint
