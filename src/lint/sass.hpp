#pragma once
// Reading disassembled SASS text (nvdisasm -c or cuobjdump -sass) into per-function
// instruction lists, and summarising one function's instruction mix.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kerncap::lint {

struct SassInstruction {
  std::string text;    // "@!P0 LDG.E R0, desc[UR4][R2.64]" (no address, no encoding, no ';')
  std::string opcode;  // "LDG.E" (predicate stripped)
  std::string base;    // "LDG" (opcode up to the first '.')
};

// Function name (as in the symbol table) -> its instructions in address order.
using SassFunctions = std::map<std::string, std::vector<SassInstruction>>;
SassFunctions parse_sass(std::string_view text);

// Counts of one function's instructions: every base opcode, and named groups a kernel
// author reads first (fp32 FMA, tensor cores, global/shared/local memory, barriers).
struct InstructionMix {
  uint64_t total = 0;
  std::map<std::string, uint64_t> by_opcode;  // base opcode -> count
  std::map<std::string, uint64_t> groups;     // group name -> count (groups with 0 omitted)
  uint64_t local_stores = 0;                  // STL
  uint64_t local_loads = 0;                   // LDL
  uint64_t barriers = 0;                      // BAR (all forms)
};
InstructionMix instruction_mix(const std::vector<SassInstruction>& code);

// The group a base opcode counts in ("" for none): "fp32", "fp64", "fp16", "mma" (warp-level
// HMMA/IMMA/DMMA), "wgmma" (Hopper warpgroup HGMMA/IGMMA/QGMMA/BGMMA), "global", "shared",
// "local", "tma", "barrier", "control".
const char* opcode_group(std::string_view base);

}  // namespace kerncap::lint
