// SASS text parsing and the instruction mix: on text in the two disassemblers' formats, and
// on what nvdisasm prints for the fixture cubin (skipped where nvdisasm is not installed).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "lint/disassembler.hpp"
#include "lint/sass.hpp"
#include "lint_fixtures.hpp"

namespace kerncap::lint {
namespace {

// The shape of `nvdisasm -c` output (CUDA 13).
constexpr const char* kNvdisasm = R"SASS(	.target	sm_90

	.elftype	@"ET_EXEC"


//--------------------- .text.k_smem              --------------------------
	.section	.text.k_smem,"ax",@progbits
	.align	128
        .global         k_smem
        .type           k_smem,@function
        .other          k_smem,@"STO_CUDA_ENTRY STV_DEFAULT"
k_smem:
.text.k_smem:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R7, SR_TID.X ;
        /*0020*/                   LDG.E R0, desc[UR4][R2.64] ;
        /*0030*/                   STS [R7], R0 ;
        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0050*/                   LDS R4, [R7+0xffc] ;
        /*0060*/                   FFMA R9, R6, R9, R11 ;
        /*0070*/              @!P0 STG.E desc[UR4][R2.64], R9 ;
        /*0080*/                   EXIT ;
.L_x_0:
        /*0090*/                   BRA `(.L_x_0);
//--------------------- .text.k_other             --------------------------
	.section	.text.k_other,"ax",@progbits
        /*0000*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ, !UPT ;
        /*0010*/                   STL [R1+0x80], R3 ;
        /*0020*/                   LDL.64 R4, [R1+0x80] ;
        /*0030*/                   EXIT ;
//--------------------- .nv.constant0.k_smem      --------------------------
	.section	.nv.constant0.k_smem,"a",@progbits
        /*0000*/ 	.zero		528
)SASS";

// The shape of `cuobjdump -sass` output: headers, and the encoding after each instruction.
constexpr const char* kCuobjdump = R"SASS(
	code for sm_90
		Function : k_smem
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                     /* 0x00000a00ff017b82 */
                                                                              /* 0x000fe40000000800 */
        /*0010*/                   FFMA R9, R6, R9, R11 ;                     /* 0x0000000906097223 */
        /*0020*/                   EXIT ;                                     /* 0x000000000000794d */
		..........
)SASS";

TEST(LintSass, ParsesNvdisasmSections) {
  const SassFunctions f = parse_sass(kNvdisasm);
  ASSERT_EQ(f.size(), 2u);  // the constant bank's .zero is not code
  const auto& code = f.at("k_smem");
  ASSERT_EQ(code.size(), 10u);
  EXPECT_EQ(code[0].text, "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(code[4].opcode, "BAR.SYNC.DEFER_BLOCKING");
  EXPECT_EQ(code[4].base, "BAR");
  EXPECT_EQ(code[7].text, "@!P0 STG.E desc[UR4][R2.64], R9");  // predicate kept in the text...
  EXPECT_EQ(code[7].opcode, "STG.E");                          // ...not in the opcode
  EXPECT_EQ(code[9].base, "BRA");
}

// nvdisasm prints ".sectioninfo" after a function's ".section" (relocatable cubins, sm_80):
// the instructions that follow are still the function's.
TEST(LintSass, SectionInfoDoesNotEndAFunction) {
  const SassFunctions fns = parse_sass(
      "\t.section\t.text.k,\"ax\",@progbits\n\t.sectioninfo\t@\"SHI_REGISTERS=10\"\n"
      "        /*0000*/                   MOV R1, c[0x0][0x28] ;\n");
  ASSERT_EQ(fns.count("k"), 1u);
  EXPECT_EQ(fns.at("k").size(), 1u);
}

TEST(LintSass, ParsesCuobjdumpFunctions) {
  const SassFunctions f = parse_sass(kCuobjdump);
  ASSERT_EQ(f.count("k_smem"), 1u);
  const auto& code = f.at("k_smem");
  ASSERT_EQ(code.size(), 3u);  // the encoding-only lines are not instructions
  EXPECT_EQ(code[1].text, "FFMA R9, R6, R9, R11");
}

TEST(LintSass, InstructionMixCountsGroups) {
  const SassFunctions f = parse_sass(kNvdisasm);
  const InstructionMix m = instruction_mix(f.at("k_smem"));
  EXPECT_EQ(m.total, 10u);
  EXPECT_EQ(m.by_opcode.at("FFMA"), 1u);
  EXPECT_EQ(m.groups.at("fp32"), 1u);
  EXPECT_EQ(m.groups.at("global"), 2u);  // LDG, STG
  EXPECT_EQ(m.groups.at("shared"), 2u);  // STS, LDS
  EXPECT_EQ(m.groups.at("barrier"), 1u);
  EXPECT_EQ(m.groups.at("control"), 2u);  // EXIT, BRA
  EXPECT_EQ(m.barriers, 1u);
  EXPECT_EQ(m.groups.count("local"), 0u);

  const InstructionMix o = instruction_mix(f.at("k_other"));
  EXPECT_EQ(o.groups.at("wgmma"), 1u);
  EXPECT_EQ(o.local_stores, 1u);
  EXPECT_EQ(o.local_loads, 1u);
}

TEST(LintSass, OpcodeGroups) {
  EXPECT_STREQ(opcode_group("HMMA"), "mma");
  EXPECT_STREQ(opcode_group("HGMMA"), "wgmma");
  EXPECT_STREQ(opcode_group("DFMA"), "fp64");
  EXPECT_STREQ(opcode_group("UTMALDG"), "tma");
  EXPECT_STREQ(opcode_group("IMAD"), "");
}

TEST(LintSass, NvdisasmOnTheFixtureCubin) {
  KC_NEED_FIXTURES();
  KC_NEED_NVDISASM(tool);
  const std::vector<uint8_t> cubin = cubin::testing::fixture("lint_sm90.cubin");
  const Disassembly d = disassemble(cubin, tool);
  const SassFunctions f = parse_sass(d.text);
  ASSERT_EQ(f.count("k_smem"), 1u) << d.text.substr(0, 2000);
  ASSERT_EQ(f.count("k_spill"), 1u);
  const InstructionMix smem = instruction_mix(f.at("k_smem"));
  EXPECT_EQ(smem.barriers, 1u);  // the one __syncthreads
  EXPECT_GE(smem.by_opcode.count("FFMA"), 1u);
  EXPECT_GE(smem.groups.at("shared"), 2u);
  EXPECT_EQ(smem.local_stores + smem.local_loads, 0u);
  const InstructionMix spill = instruction_mix(f.at("k_spill"));
  EXPECT_GT(spill.local_stores, 0u);  // 32 registers for 64 live values
  EXPECT_GT(spill.local_loads, 0u);
  EXPECT_EQ(spill.barriers, 0u);
}

TEST(LintSass, MissingDisassemblerIsAUsageError) {
  const std::vector<uint8_t> bytes(16, 0);
  try {
    disassemble(bytes, "/nonexistent/nvdisasm");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/nvdisasm"), std::string::npos);
  }
}

}  // namespace
}  // namespace kerncap::lint
