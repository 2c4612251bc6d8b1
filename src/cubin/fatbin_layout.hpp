#pragma once
// Fatbin magic numbers and field values (the full layout is described in fatbin.cpp).
#include <cstdint>

namespace kerncap::cubin::detail {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;
inline constexpr uint32_t kFatbinWrapperMagic = 0x466243B1;
inline constexpr uint64_t kFatbinHeaderSize = 16;
inline constexpr uint64_t kFatbinEntryMin = 64;
inline constexpr uint16_t kFatbinKindPtx = 1;
inline constexpr uint16_t kFatbinKindElf = 2;
inline constexpr uint64_t kFatbinFlagLz4 = 0x2000;
inline constexpr uint64_t kFatbinFlagZstd = 0x8000;

}  // namespace kerncap::cubin::detail
