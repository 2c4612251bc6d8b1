#include "cubin/elf.hpp"

#include <string>

#include <fmt/format.h>

#include "cubin/bytes.hpp"

namespace kerncap::cubin::detail {

namespace {

constexpr uint64_t kEhdrSize = 64;
constexpr uint64_t kShdrSize = 64;
constexpr uint64_t kSymSize = 24;

ElfSection read_section_header(const Bytes& b, uint64_t at) {
  ElfSection s;
  s.type = b.u32(at + 4, "section header");
  s.flags = b.u64(at + 8, "section header");
  s.offset = b.u64(at + 24, "section header");
  s.size = b.u64(at + 32, "section header");
  s.link = b.u32(at + 40, "section header");
  s.info = b.u32(at + 44, "section header");
  return s;
}

// Extended numbering: with 0xff00+ sections the real counts live in section 0.
void read_sections(const Bytes& b, Elf& elf) {
  const uint64_t shoff = b.u64(0x28, "e_shoff");
  const uint16_t shentsize = b.u16(0x3a, "e_shentsize");
  uint64_t shnum = b.u16(0x3c, "e_shnum");
  uint32_t shstrndx = b.u16(0x3e, "e_shstrndx");
  if (shoff == 0) b.fail("e_shoff", "no section header table");
  if (shentsize != kShdrSize) b.fail("e_shentsize", fmt::format("{} is not 64", shentsize));
  b.need(shoff, kShdrSize, "section header table");
  const ElfSection zero = read_section_header(b, shoff);
  if (shnum == 0) shnum = zero.size;
  if (shstrndx == kShnXindex) shstrndx = zero.link;
  if (shnum == 0 || shnum > (b.size() - shoff) / kShdrSize)
    b.fail("section header table", fmt::format("{} sections at {:#x} do not fit", shnum, shoff));
  elf.sections.reserve(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    ElfSection s = read_section_header(b, shoff + i * kShdrSize);
    if (s.type != kShtNobits) b.need(s.offset, s.size, "section contents");
    elf.sections.push_back(s);
  }
  if (shstrndx >= elf.sections.size()) b.fail("e_shstrndx", "out of range");
  const ElfSection& strs = elf.sections[shstrndx];
  if (strs.type == kShtNobits) b.fail(".shstrtab", "has no contents");
  const Bytes names(b.sub(strs.offset, strs.size, ".shstrtab"), b.what() + " .shstrtab");
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint32_t at = b.u32(shoff + i * kShdrSize, "sh_name");
    elf.sections[i].name = i == 0 ? std::string_view{} : names.cstr(at, "section name");
    elf.by_name.emplace(elf.sections[i].name, static_cast<uint32_t>(i));
  }
}

void read_symbols(const Bytes& b, Elf& elf) {
  const ElfSection* symtab = nullptr;
  const ElfSection* xindex = nullptr;
  for (const ElfSection& s : elf.sections) {
    if (s.type == kShtSymtab && !symtab) symtab = &s;
    if (s.type == kShtSymtabShndx && !xindex) xindex = &s;
  }
  if (!symtab) return;  // a cubin without symbols holds no kernels we can name
  if (symtab->link >= elf.sections.size()) b.fail(".symtab", "string table index out of range");
  const ElfSection& strtab = elf.sections[symtab->link];
  if (strtab.type == kShtNobits) b.fail(".strtab", "has no contents");
  const Bytes strs(b.sub(strtab.offset, strtab.size, ".strtab"), b.what() + " .strtab");
  const Bytes syms(b.sub(symtab->offset, symtab->size, ".symtab"), b.what() + " .symtab");
  const uint64_t count = symtab->size / kSymSize;
  elf.symbols.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = i * kSymSize;
    ElfSymbol s;
    s.name = strs.cstr(syms.u32(at, "st_name"), "symbol name");
    const uint8_t info = syms.u8(at + 4, "st_info");
    s.type = info & 0xf;
    s.bind = info >> 4;
    s.other = syms.u8(at + 5, "st_other");
    const uint16_t shndx = syms.u16(at + 6, "st_shndx");
    s.value = syms.u64(at + 8, "st_value");
    s.size = syms.u64(at + 16, "st_size");
    if (shndx == kShnXindex) {
      if (!xindex) b.fail(".symtab", "symbol needs .symtab_shndx, which is missing");
      const Bytes x(b.sub(xindex->offset, xindex->size, ".symtab_shndx"), b.what() + " .symtab_shndx");
      s.section = x.u32(i * 4, "extended section index");
    } else if (shndx >= kShnLoreserve) {
      s.special = true;
    } else {
      s.section = shndx;
    }
    if (s.section >= elf.sections.size()) b.fail("symbol", fmt::format("{}: section index out of range", s.name));
    elf.symbols.push_back(s);
  }
}

}  // namespace

const ElfSection* Elf::find(std::string_view name) const {
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : &sections[it->second];
}

std::span<const uint8_t> Elf::contents(const ElfSection& s) const {
  if (s.type == kShtNobits) return {};
  return image.subspan(s.offset, s.size);  // checked in read_sections
}

Elf read_elf(std::span<const uint8_t> image, std::string_view what) {
  const Bytes b(image, std::string(what));
  b.need(0, kEhdrSize, "ELF header");
  if (b.u32(0, "magic") != 0x464c457f) b.fail("ELF header", "no ELF magic");
  if (b.u8(4, "EI_CLASS") != 2) b.fail("ELF header", "not a 64-bit ELF");
  if (b.u8(5, "EI_DATA") != 1) b.fail("ELF header", "not little endian");
  Elf elf;
  elf.image = image;
  elf.abi_version = b.u8(8, "EI_ABIVERSION");
  elf.type = b.u16(0x10, "e_type");
  elf.machine = b.u16(0x12, "e_machine");
  elf.flags = b.u32(0x30, "e_flags");
  if (elf.machine != kEmCuda)
    b.fail("e_machine", fmt::format("{} is not EM_CUDA (190): this ELF is not a cubin", elf.machine));
  read_sections(b, elf);
  read_symbols(b, elf);
  return elf;
}

int sm_from_flags(uint8_t abi_version, uint32_t flags) {
  if (abi_version < 8) return static_cast<int>(flags & 0xff);
  return static_cast<int>((flags >> 8) & 0xff);
}

}  // namespace kerncap::cubin::detail
