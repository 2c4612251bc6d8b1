#include "source/object_symbols.hpp"

#include <cstring>
#include <regex>

#include "cubin/bytes.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"

namespace kerncap::source {
namespace {

using cubin::detail::Bytes;

struct Section {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0;
};

// "_Z21__device_stub__Z2ckPiPi" -> "_Z2ckPi": the stub's own name is length-prefixed.
void add_stub(std::string_view sym, std::set<std::string>& out) {
  static const std::regex re(R"(^_ZL?(\d+)__device_stub__)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(sym.begin(), sym.end(), m, re)) return;
  const size_t len = std::stoul(m[1].str());
  const size_t name_at = static_cast<size_t>(m.position(1) + m.length(1));
  const size_t prefix = std::strlen("__device_stub__");
  if (len <= prefix || name_at + len > sym.size()) return;
  std::string inner(sym.substr(name_at + prefix, len - prefix));
  out.insert(inner.starts_with("Z") ? "_" + inner : inner);  // extern "C": the bare name
}

void read_object(const Bytes& b, std::set<std::string>& out) {
  if (b.size() < 64 || b.u32(0, "magic") != 0x464c457f || b.u8(4, "class") != 2) return;  // ELF64 only
  const uint64_t shoff = b.u64(0x28, "e_shoff");
  const uint16_t shentsize = b.u16(0x3a, "e_shentsize"), shnum = b.u16(0x3c, "e_shnum");
  const uint16_t shstrndx = b.u16(0x3e, "e_shstrndx");
  if (shentsize < 64 || shnum == 0 || shstrndx >= shnum) return;
  std::vector<Section> secs(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t at = shoff + uint64_t{i} * shentsize;
    secs[i] = {b.u32(at, "sh_name"), b.u32(at + 4, "sh_type"), b.u32(at + 40, "sh_link"), b.u64(at + 24, "sh_offset"),
               b.u64(at + 32, "sh_size")};
  }
  const Section& names = secs[shstrndx];
  for (const Section& s : secs) {
    const std::string_view sname = b.cstr(names.offset + s.name, "section name");
    if (sname == ".nv_fatbin" && s.type != 8) {
      try {
        for (auto& n : cubin::kernel_names(b.sub(s.offset, s.size, ".nv_fatbin"))) out.insert(n);
      } catch (const Error&) {
        // An unreadable fatbin (newer format): the stubs below still name the kernels.
      }
    }
    if (s.type == 2 && s.link < secs.size()) {  // SHT_SYMTAB
      const Section& strs = secs[s.link];
      for (uint64_t at = s.offset; at + 24 <= s.offset + s.size; at += 24) {
        const uint32_t n = b.u32(at, "st_name");
        if (n) add_stub(b.cstr(strs.offset + n, "symbol name"), out);
      }
    }
  }
}

}  // namespace

std::set<std::string> object_kernel_names(const std::filesystem::path& object) {
  std::set<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(object, ec)) return out;
  try {
    const auto bytes = format::read_file(object);
    read_object(Bytes(bytes, object.string()), out);
  } catch (const Error&) {
    // Truncated or not an object: no names (the caller falls back to other evidence).
  }
  return out;
}

}  // namespace kerncap::source
