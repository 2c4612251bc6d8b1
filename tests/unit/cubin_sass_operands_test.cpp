// The constant-operand decoder (sass_operands.hpp) against nvdisasm's text on the fixture
// cubins, sm_80 to sm_100: every c[bank][offset] nvdisasm prints for a bank above 0 is
// decoded with the same bank, offset and whether a register indexes it, and the decoder
// finds none where nvdisasm prints none. Skips when nvdisasm was not found at build time.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <regex>
#include <string>

#include "cubin/sass_operands.hpp"
#include "cubin_fixtures.hpp"

namespace kerncap::cubin {
namespace {

#ifdef KERNCAP_NVDISASM
const char* const kNvdisasm = KERNCAP_NVDISASM;
#else
const char* const kNvdisasm = nullptr;
#endif

std::string run(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), &::pclose);
  std::string out;
  char buf[4096];
  while (p && std::fgets(buf, sizeof buf, p.get())) out += buf;
  return out;
}

struct Counts {
  int operands = 0, instructions = 0;
};

Counts check(const std::string& fixture) {
  const std::string text = run(std::string(kNvdisasm) + " -hex " + testing::kFixtureDir + "/" + fixture + " 2>&1");
  const std::regex line(R"(/\*[0-9a-f]{4,}\*/\s+(.*?);\s*/\* (0x[0-9a-f]{16}) \*/)");
  const std::regex operand(R"(c\[(0x[0-9a-f]+)\]\[([^\]]+)\])");
  const std::regex reg(R"(\bU?R[0-9])");
  const std::regex imm(R"(0x[0-9a-f]+)");
  Counts n;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it) {
    const std::string ins = (*it)[1];
    const uint64_t lo = std::stoull((*it)[2], nullptr, 16);
    uint8_t code[16] = {};
    std::memcpy(code, &lo, 8);
    const auto mine = detail::constant_operands(code);
    ++n.instructions;
    std::vector<detail::ConstOperand> truth;
    for (auto o = std::sregex_iterator(ins.begin(), ins.end(), operand); o != std::sregex_iterator(); ++o) {
      detail::ConstOperand c;
      c.bank = static_cast<uint32_t>(std::stoul((*o)[1], nullptr, 16));
      if (c.bank == 0) continue;
      const std::string what = (*o)[2];
      std::smatch m;
      c.offset = std::regex_search(what, m, imm) ? std::stoull(m[0], nullptr, 16) : 0;
      c.indexed = std::regex_search(what, reg);
      truth.push_back(c);
    }
    n.operands += static_cast<int>(truth.size());
    EXPECT_LE(truth.size(), 1u) << ins;
    EXPECT_EQ(mine.size(), truth.size()) << fixture << ": " << ins;
    if (truth.empty() || mine.size() != truth.size()) continue;
    EXPECT_EQ(mine[0].bank, truth[0].bank) << ins;
    EXPECT_EQ(mine[0].offset, truth[0].offset) << ins;
    EXPECT_EQ(mine[0].indexed, truth[0].indexed) << ins;
  }
  return n;
}

TEST(SassOperands, AgreeWithNvdisasm) {
  KC_NEED_FIXTURES();
  if (!kNvdisasm) GTEST_SKIP() << "no nvdisasm at build time";
  int operands = 0;
  for (const char* f : {"refs_sm90.cubin", "refs_sm100.cubin", "kernels_sm80.cubin", "kernels_sm90.cubin",
                        "kernels_sm100.cubin", "cub_main.cubin", "lint_sm90.cubin", "cluster_sm90.cubin"}) {
    const Counts n = check(f);
    EXPECT_GT(n.instructions, 0) << f << ": nvdisasm printed no instructions";
    operands += n.operands;
  }
  EXPECT_GT(operands, 10) << "the fixtures no longer read module globals: the test checks nothing";
}

TEST(SassOperands, PartialInstructionsAreNotRead) {
  const uint8_t code[20] = {};
  EXPECT_TRUE(detail::constant_operands(code).empty());
}

}  // namespace
}  // namespace kerncap::cubin
