#pragma once
// What a kernel's own SASS says about the memory it writes, for kernels whose name carries no
// C++ signature (extern "C", PTX from JITs, closed libraries): the element type of each global
// store, from the arithmetic that produced the stored register (FADD/FFMA → fp32, DADD/DFMA →
// fp64, HADD2/HFMA2 → fp16, .BF16_V2 → bf16, F2F/F2FP conversions by their destination type),
// the parameter whose pointer the store's address was computed from, and whether the kernel
// adds floats atomically (global RED/ATOM .F32/.F64/.F16x2/.BF16x2, or a compare-and-swap
// loop, global or shared, whose new value is a float add): such a kernel's results depend on
// the order of its threads, so it is nondeterministic by construction.
//
// Conservative on purpose: a wrong type lets a wrong result pass (an int32 read as fp32 is a
// denormal, within any atol), an unknown one only leaves bytes exact. A stored register whose
// value comes from a load, a move of unknown origin, or mixed arithmetic is unknown. The
// analysis is a backward walk over the function's instructions in address order (nearest
// definitions first, predicated ones combined), not a full data-flow solve: good for the
// short def-use chains in front of stores, and unknown when in doubt.
//
// Pure functions over disassembled text (lint::parse_sass); sass_regions.hpp disassembles a
// capture's kernel and maps the stores to its regions.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/compare.hpp"
#include "lint/sass.hpp"

namespace kerncap::replay {

// The kind of value a register holds, as far as its definition tells.
enum class ValueKind {
  Zero,      // RZ: the same bits in every type (a store of it says nothing of the type)
  Unknown,   // a load, a constant, a move of unknown origin, a mix
  Integer,   // integer or logic arithmetic
  Float,     // floating-point arithmetic of `dtype`
};

struct ValueType {
  ValueKind kind = ValueKind::Unknown;
  compare::DType dtype = compare::DType::Bytes;  // with Float: F32, F64, F16, BF16, F8E4M3, F8E5M2
  bool operator==(const ValueType&) const = default;
};

// One instruction that writes global (or generic) memory: STG/ST, RED/ATOM and their G forms,
// a TMA or bulk store from shared memory.
struct SassStore {
  std::string text;       // the instruction, for messages
  uint32_t width = 0;     // bits per thread (0: not known, a bulk store)
  ValueType value;        // what is stored
  bool atomic = false;    // RED/ATOM (a read-modify-write)
  // The parameter-buffer offset of the 8-byte word the address was computed from (the
  // kernel's pointer parameter, or a pointer field of a struct passed by value), when the
  // address traces back to one (LDC c[0x0][...] through IMAD.WIDE/IADD3/LEA/moves).
  std::optional<uint32_t> param;
  // The address is a word of the driver's own constants below the parameters, moved or indexed
  // (c[0x0][0x44]: a cooperative launch's grid barrier; the stack): memory no pointer of the
  // application reaches, so the store reaches no region of the capture.
  bool driver_memory = false;
};

// Walker::param's answer for an address that traces to a driver constant (driver_memory).
inline constexpr uint32_t kDriverConstant = UINT32_MAX;

struct SassFacts {
  std::vector<SassStore> stores;
  // The float atomic adds found (instruction texts): non-empty = nondeterministic by construction.
  std::vector<std::string> float_atomics;
  // The function calls other code (CALL; nvcc's built-in division, remainder, square root,
  // reciprocal and synchronisation subroutines excepted: they store nothing): stores and
  // atomics there are not seen, so no store type is trusted (float_atomics still stands for
  // what was seen).
  bool calls = false;
};

// The facts of one function's instructions. `param_base`: where the parameters start in
// constant bank 0 (cubin::KernelInfo::param_cbank_offset), 0 when not known (no attribution).
SassFacts analyse_sass(const std::vector<lint::SassInstruction>& code, uint32_t param_base);

// "fp32" / "integer" / "zero" / "unknown": for messages and tests.
std::string to_string(const ValueType& v);

}  // namespace kerncap::replay
