#pragma once
// The .nv.info attribute stream ptxas writes next to the code: the global ".nv.info"
// (per-function register counts and stack sizes, keyed by symbol index) and one
// ".nv.info.<kernel>" per kernel (parameter layout, launch bounds, ...).
//
// Layout, checked against CUDA 13.0 nvcc output for sm_75..sm_120: a sequence of records
// on a 4-byte grid, each {uint8 format, uint8 attribute, ...}:
//   EIFMT_NVAL 0x01  no value; 2 bytes of padding (4 bytes in all)
//   EIFMT_BVAL 0x02  1-byte value in a 2-byte field (4 bytes in all)
//   EIFMT_HVAL 0x03  2-byte value (4 bytes in all)
//   EIFMT_SVAL 0x04  uint16 size, then `size` bytes
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kerncap::cubin::detail {

inline constexpr uint8_t kEifmtNval = 0x01;
inline constexpr uint8_t kEifmtBval = 0x02;
inline constexpr uint8_t kEifmtHval = 0x03;
inline constexpr uint8_t kEifmtSval = 0x04;

// The attributes kerncap reads; each was seen in CUDA 13.0 output with the layout noted.
namespace eiattr {
inline constexpr uint8_t kMaxThreads = 0x05;     // SVAL {u32 x, y, z}: __launch_bounds__ max threads
inline constexpr uint8_t kParamCbank = 0x0a;     // SVAL {u32 sym, u16 offset, u16 size} of params in bank 0
inline constexpr uint8_t kFrameSize = 0x11;      // SVAL {u32 sym, u32 bytes}: per-thread stack frame
inline constexpr uint8_t kMinStackSize = 0x12;   // SVAL {u32 sym, u32 bytes}: cumulative stack incl. callees
inline constexpr uint8_t kKparamInfo = 0x17;     // SVAL {u32 index, u16 ordinal, u16 offset, u32 packed}
inline constexpr uint8_t kCbankParamSize = 0x19; // HVAL: parameter bytes
inline constexpr uint8_t kMaxregCount = 0x1b;    // HVAL: register limit (__maxnreg__, launch bounds)
inline constexpr uint8_t kExitInstrOffsets = 0x1c;  // SVAL u32[]: only entry functions have EXITs
inline constexpr uint8_t kCrsStackSize = 0x1e;   // SVAL {u32 bytes}
inline constexpr uint8_t kMaxStackSize = 0x23;   // SVAL {u32 sym, u32 bytes} (relocatable cubins)
inline constexpr uint8_t kRegcount = 0x2f;       // SVAL {u32 sym, u32 registers}
inline constexpr uint8_t kCudaApiVersion = 0x37; // SVAL {u32}: 130 for CUDA 13.0
inline constexpr uint8_t kCtaPerCluster = 0x3d;  // SVAL {u32 x, y, z}: __cluster_dims__
inline constexpr uint8_t kExplicitCluster = 0x3e;  // NVAL: kernel declares cluster dims
inline constexpr uint8_t kKparamInfoV2 = 0x45;   // SVAL {u32 index, u16 ordinal, u16 offset, u32 flags:8|size:16}
                                                 // used when a parameter exceeds 16383 bytes
}  // namespace eiattr

struct NvAttr {
  uint8_t format = 0;
  uint8_t attr = 0;
  uint16_t value = 0;               // NVAL/BVAL/HVAL
  std::span<const uint8_t> data;    // SVAL payload (bounds-checked)
};

// Throws Error(Input) when a record runs past the section or has an unknown format.
std::vector<NvAttr> read_nvinfo(std::span<const uint8_t> section, std::string_view name);

// Little-endian u32 at `index` * 4 of an SVAL payload; throws Error(Input) if short.
uint32_t sval_u32(const NvAttr& a, size_t index, std::string_view name);
uint16_t sval_u16(const NvAttr& a, size_t byte_offset, std::string_view name);

}  // namespace kerncap::cubin::detail
