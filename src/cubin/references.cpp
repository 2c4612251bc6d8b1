// globals_used: which module globals a kernel's code can reach, read from the cubin alone.
//
// A whole-program cubin (nvcc -cubin, the driver's usual input) has no relocations in its
// code: a kernel takes a __device__ variable's address from a slot of constant bank 4
// (.nv.constant4, filled by .rela.nv.constant4 at load) and reads a __constant__ variable
// at its offset in bank 3. Which slots and offsets the kernel reads is written only in its
// instructions, so the code is scanned for constant-bank operands (sm_70+ encoding, 16-byte
// instructions: bank in bits 54..58, byte offset in bits 38..53 (37..52 for sm_100's LDCU),
// present when the operand form in bits 9..11 is 3 or 5). Checked against nvdisasm on
// sm_75 to sm_120 code: every constant operand of a bank above 0 decoded, none invented. -rdc objects and device functions in their own sections
// reach symbols through relocations of .text.<name>, followed the same way, and a
// variable's initialiser (a pointer to another variable) is followed too.
// Anything this cannot see (a pre-Volta encoding, an unresolved call) answers "unknown".
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "cubin/cubin.hpp"
#include "cubin/elf.hpp"
#include "cubin/sass_operands.hpp"

namespace kerncap::cubin {

using namespace detail;

namespace {

constexpr uint32_t kShtRela = 4;
constexpr uint32_t kShtRel = 9;
constexpr uint8_t kSttSection = 3;

struct Reloc {
  uint64_t offset = 0;
  uint32_t sym = 0;
  int64_t addend = 0;
};

struct Reader {
  const Elf& elf;
  std::set<std::string_view> global_names;          // Image::globals of this cubin
  std::map<uint32_t, std::vector<Reloc>> relocs;    // target section -> its relocations
  std::set<uint32_t> texts_seen, vars_seen;         // section indexes / symbol indexes
  std::vector<uint32_t> text_queue, var_queue;
  bool unknown = false;

  explicit Reader(const Elf& e) : elf(e) {}

  void read_relocs() {
    for (const ElfSection& s : elf.sections) {
      if (s.type != kShtRela && s.type != kShtRel) continue;
      const uint64_t entry = s.type == kShtRela ? 24 : 16;
      const std::span<const uint8_t> bytes = elf.contents(s);
      auto& into = relocs[s.info];
      for (uint64_t at = 0; at + entry <= bytes.size(); at += entry) {
        Reloc r;
        std::memcpy(&r.offset, bytes.data() + at, 8);
        uint64_t info = 0;
        std::memcpy(&info, bytes.data() + at + 8, 8);
        r.sym = static_cast<uint32_t>(info >> 32);
        if (entry == 24) std::memcpy(&r.addend, bytes.data() + at + 16, 8);
        if (r.sym < elf.symbols.size()) into.push_back(r);
      }
    }
  }

  bool is_global(uint32_t sym) const {
    const ElfSymbol& s = elf.symbols[sym];
    return s.type == kSttObject && s.section != kShnUndef && global_names.contains(s.name);
  }

  void use_var(uint32_t sym) {
    if (vars_seen.insert(sym).second) var_queue.push_back(sym);
  }
  void use_text(uint32_t section) {
    if (section != kShnUndef && texts_seen.insert(section).second) text_queue.push_back(section);
  }

  // Every global variable of `section` whose bytes hold `offset` (or all of them).
  void use_vars_in(uint32_t section, std::optional<uint64_t> offset) {
    for (uint32_t i = 0; i < elf.symbols.size(); ++i) {
      const ElfSymbol& s = elf.symbols[i];
      if (s.section != section || !is_global(i)) continue;
      if (!offset || (*offset >= s.value && *offset - s.value < std::max<uint64_t>(s.size, 1))) use_var(i);
    }
  }

  // What a relocation (or an address-table slot) points at.
  void use_symbol(uint32_t sym, int64_t addend) {
    const ElfSymbol& s = elf.symbols[sym];
    if (s.special) return;
    if (s.section == kShnUndef) {
      if (s.type == kSttFunc) unknown = true;  // code we do not have
      return;
    }
    const std::string_view sec = elf.sections[s.section].name;
    if (s.type == kSttFunc) return use_text(s.section);
    if (s.type == kSttObject) {
      if (is_global(sym)) use_var(sym);
      return;
    }
    if (s.type == kSttSection) {
      if (sec.starts_with(".text.")) return use_text(s.section);
      use_vars_in(s.section, addend >= 0 ? std::optional<uint64_t>(s.value + static_cast<uint64_t>(addend))
                                         : std::nullopt);
    }
  }

  // A constant-bank operand: a __constant__ variable's bytes, or a slot of an address
  // table (bank 4) that a relocation fills with a variable's or function's address.
  void use_bank(uint32_t bank, uint64_t offset, bool indexed) {
    const auto it = elf.by_name.find(".nv.constant" + std::to_string(bank));
    if (it == elf.by_name.end()) return;  // a bank the driver fills (launch values)
    const uint32_t section = it->second;
    use_vars_in(section, indexed ? std::nullopt : std::optional<uint64_t>(offset));
    const auto table = relocs.find(section);
    if (table == relocs.end()) return;
    for (const Reloc& r : table->second)
      if (indexed || (offset >= r.offset && offset - r.offset < 8)) use_symbol(r.sym, r.addend);
  }

  void scan_text(uint32_t section) {
    for (const Reloc& r : relocs[section]) use_symbol(r.sym, r.addend);
    const std::span<const uint8_t> code = elf.contents(elf.sections[section]);
    if (code.size() % 16 != 0) {
      unknown = true;
      return;
    }
    for (const ConstOperand& c : constant_operands(code)) use_bank(c.bank, c.offset, c.indexed);
  }

  // A variable's initialiser may hold the address of another variable or function.
  void scan_var(uint32_t sym) {
    const ElfSymbol& s = elf.symbols[sym];
    const auto it = relocs.find(s.section);
    if (it == relocs.end()) return;
    for (const Reloc& r : it->second)
      if (r.offset >= s.value && r.offset - s.value < s.size) use_symbol(r.sym, r.addend);
  }
};

}  // namespace

namespace detail {

std::vector<ConstOperand> constant_operands(std::span<const uint8_t> code) {
  std::vector<ConstOperand> out;
  if (code.size() % 16 != 0) return out;
  for (size_t at = 0; at < code.size(); at += 16) {
    uint64_t lo = 0;
    std::memcpy(&lo, code.data() + at, 8);
    const uint32_t form = (lo >> 9) & 7;
    if (form != 3 && form != 5) continue;
    const uint32_t bank = (lo >> 54) & 0x1f;
    if (bank == 0) continue;  // parameters
    const uint32_t op = lo & 0xfff;
    // sm_100's LDCU (0x7ac) keeps its offset one bit lower than every other form.
    const uint64_t offset = (op == 0x7ac ? lo >> 37 : lo >> 38) & 0xffff;
    // LDC and LDCU take a register index (RZ = 255); ULDC has a form with a uniform one
    // (0xabb, URZ = 63) beside the direct one (0xab9).
    const bool indexed = ((op == 0xb82 || op == 0x7ac) && ((lo >> 24) & 0xff) != 0xff) ||
                         (op == 0xabb && ((lo >> 24) & 0x3f) != 0x3f);
    out.push_back({at, bank, offset, indexed});
  }
  return out;
}

}  // namespace detail

std::optional<std::vector<std::string>> globals_used(std::span<const uint8_t> image, std::string_view kernel,
                                                     int sm) {
  const std::vector<uint8_t> code = code_for(image, sm);
  if (detect_kind(code) != ImageKind::Cubin) return std::nullopt;  // PTX: no instructions to read
  const Image parsed = parse_cubin(code);
  const Elf elf = read_elf(code, "cubin");
  if (sm_from_flags(elf.abi_version, elf.flags) < 70) return std::nullopt;  // 8-byte encodings
  const auto text = elf.by_name.find(".text." + std::string(kernel));
  if (text == elf.by_name.end()) return std::nullopt;
  Reader r(elf);
  for (const GlobalVar& g : parsed.globals) r.global_names.insert(g.name);
  r.read_relocs();
  r.use_text(text->second);
  while (!r.text_queue.empty() || !r.var_queue.empty()) {
    if (!r.text_queue.empty()) {
      const uint32_t t = r.text_queue.back();
      r.text_queue.pop_back();
      r.scan_text(t);
    } else {
      const uint32_t v = r.var_queue.back();
      r.var_queue.pop_back();
      r.scan_var(v);
    }
    if (r.unknown) return std::nullopt;
  }
  std::vector<std::string> names;
  for (uint32_t sym : r.vars_seen) names.emplace_back(elf.symbols[sym].name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace kerncap::cubin
