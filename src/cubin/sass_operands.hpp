#pragma once
// Constant-bank operands of SASS instructions, read from their encoding (sm_70 and later:
// 16-byte instructions). Used by globals_used (references.cpp); checked against nvdisasm
// by tests/unit/cubin_sass_operands_test.cpp where nvdisasm is installed.
#include <cstdint>
#include <span>
#include <vector>

namespace kerncap::cubin::detail {

struct ConstOperand {
  uint64_t at = 0;      // byte offset of the instruction in its section
  uint32_t bank = 0;    // c[bank]
  uint64_t offset = 0;  // c[bank][offset]: the immediate part
  bool indexed = false; // plus a register: the immediate is only where the access starts
};

// Every constant operand of a bank above 0 (bank 0 holds the launch's parameters) in one
// section of code. Empty when the size is not a whole number of instructions.
std::vector<ConstOperand> constant_operands(std::span<const uint8_t> code);

}  // namespace kerncap::cubin::detail
