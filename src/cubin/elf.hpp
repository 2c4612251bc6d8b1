#pragma once
// A minimal ELF64 little-endian reader: just the section table and the symbol table,
// which is all a cubin's metadata lives in. No <elf.h>: the CUDA values are not there
// and the structs would invite unchecked pointer casts.
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kerncap::cubin::detail {

inline constexpr uint16_t kEmCuda = 190;       // e_machine of every cubin
inline constexpr uint16_t kEtRel = 1;          // relocatable (nvcc -rdc / -c output)
inline constexpr uint32_t kShtNobits = 8;      // no bytes in the file (.nv.global, .nv.shared.*)
inline constexpr uint32_t kShtSymtab = 2;
inline constexpr uint32_t kShtSymtabShndx = 18;
inline constexpr uint8_t kSttObject = 1;
inline constexpr uint8_t kSttFunc = 2;
inline constexpr uint16_t kShnUndef = 0;
inline constexpr uint16_t kShnLoreserve = 0xff00;
inline constexpr uint16_t kShnXindex = 0xffff;
inline constexpr uint8_t kStoCudaEntry = 0x10;    // st_other bit ptxas sets on __global__ functions
inline constexpr uint8_t kStoCudaManaged = 0x04;  // st_other bit seen on __managed__ variables

struct ElfSection {
  std::string_view name;
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
};

struct ElfSymbol {
  std::string_view name;
  uint8_t type = 0;   // STT_*
  uint8_t bind = 0;   // STB_*
  uint8_t other = 0;  // st_other (CUDA keeps entry/managed bits here)
  uint32_t section = 0;  // resolved section index (SHN_XINDEX followed); 0 = undefined
  bool special = false;  // SHN_ABS / SHN_COMMON and friends: not in a real section
  uint64_t value = 0;
  uint64_t size = 0;
};

struct Elf {
  std::span<const uint8_t> image;
  uint16_t type = 0;  // e_type
  uint16_t machine = 0;
  uint8_t abi_version = 0;  // e_ident[EI_ABIVERSION]: 7 = old CUDA ABI, 8 = CUDA 12.8+/13
  uint32_t flags = 0;       // e_flags
  std::vector<ElfSection> sections;
  std::vector<ElfSymbol> symbols;  // indexed like .symtab
  std::unordered_map<std::string_view, uint32_t> by_name;  // first section of each name

  const ElfSection* find(std::string_view name) const;
  // File bytes of a section; empty for SHT_NOBITS. Bounds were checked on read.
  std::span<const uint8_t> contents(const ElfSection& s) const;
};

// Throws Error(Input) on anything malformed; `what` names the object in messages.
Elf read_elf(std::span<const uint8_t> image, std::string_view what = "cubin");

// SM number from a cubin's e_flags: CUDA's old ELF ABI (EI_ABIVERSION 7) keeps it in the
// low byte, the new one (8, every CUDA 13 cubin, sm_75 to sm_121) in bits 8..15.
int sm_from_flags(uint8_t abi_version, uint32_t flags);

}  // namespace kerncap::cubin::detail
