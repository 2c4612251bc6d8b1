#include "cubin/nvinfo.hpp"

#include <string>

#include <fmt/format.h>

#include "cubin/bytes.hpp"

namespace kerncap::cubin::detail {

std::vector<NvAttr> read_nvinfo(std::span<const uint8_t> section, std::string_view name) {
  const Bytes b(section, std::string(name));
  std::vector<NvAttr> out;
  uint64_t at = 0;
  while (at < b.size()) {
    NvAttr a;
    a.format = b.u8(at, "attribute format");
    a.attr = b.u8(at + 1, "attribute id");
    switch (a.format) {
      case kEifmtNval:
      case kEifmtBval:
      case kEifmtHval:
        a.value = b.u16(at + 2, "attribute value");
        at += 4;
        break;
      case kEifmtSval: {
        const uint16_t size = b.u16(at + 2, "attribute size");
        a.data = b.sub(at + 4, size, fmt::format("attribute {:#04x} payload", a.attr));
        at += 4 + size;
        break;
      }
      default:
        b.fail("attribute format", fmt::format("unknown format {:#04x} at offset {:#x}", a.format, at));
    }
    out.push_back(a);
  }
  return out;
}

uint32_t sval_u32(const NvAttr& a, size_t index, std::string_view name) {
  const Bytes b(a.data, std::string(name));
  return b.u32(index * 4, fmt::format("attribute {:#04x}", a.attr));
}

uint16_t sval_u16(const NvAttr& a, size_t byte_offset, std::string_view name) {
  const Bytes b(a.data, std::string(name));
  return b.u16(byte_offset, fmt::format("attribute {:#04x}", a.attr));
}

}  // namespace kerncap::cubin::detail
