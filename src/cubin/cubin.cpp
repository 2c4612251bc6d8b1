// parse_cubin: kernels, their parameter layout and resources, and module globals of one
// cubin (ELF64, EM_CUDA). Everything comes from the symbol table, the section table and
// the .nv.info attribute streams (see nvinfo.hpp for what each attribute holds).
#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "common/error.hpp"
#include "cubin/cubin.hpp"
#include "cubin/elf.hpp"
#include "cubin/nvinfo.hpp"

namespace kerncap::cubin {

using namespace detail;

namespace {

// On sm_90+ a linked cubin's .nv.shared.<kernel> starts with the 1 KiB of shared memory
// the system reserves per block (user data begins at 0x400; ptxas -v leaves it out). The
// image references .nv.reservedSmem.offset0 / has .nv.shared.reserved.0 exactly then;
// relocatable (-rdc) objects do not carry it yet, nvlink adds it.
constexpr int kReservedSmem = 1024;

bool has_reserved_smem(const Elf& elf) {
  if (elf.type == kEtRel) return false;
  for (const ElfSymbol& s : elf.symbols)
    if (s.name == ".nv.reservedSmem.offset0") return true;
  return elf.find(".nv.shared.reserved.0") != nullptr;
}

// Per-symbol values from the global .nv.info, keyed by symbol index.
struct FunctionResources {
  std::map<uint32_t, uint32_t> regs, frame, min_stack, max_stack;
};

FunctionResources read_global_info(const Elf& elf) {
  FunctionResources r;
  const ElfSection* info = elf.find(".nv.info");
  if (!info) return r;
  for (const NvAttr& a : read_nvinfo(elf.contents(*info), "cubin .nv.info")) {
    if (a.format != kEifmtSval) continue;
    std::map<uint32_t, uint32_t>* into = nullptr;
    switch (a.attr) {
      case eiattr::kRegcount: into = &r.regs; break;
      case eiattr::kFrameSize: into = &r.frame; break;
      case eiattr::kMinStackSize: into = &r.min_stack; break;
      case eiattr::kMaxStackSize: into = &r.max_stack; break;
      default: continue;
    }
    (*into)[sval_u32(a, 0, ".nv.info")] = sval_u32(a, 1, ".nv.info");
  }
  return r;
}

int lookup(const std::map<uint32_t, uint32_t>& m, uint32_t sym) {
  auto it = m.find(sym);
  return it == m.end() ? -1 : static_cast<int>(std::min<uint32_t>(it->second, INT32_MAX));
}

// One parameter from EIATTR_KPARAM_INFO (size in bits 18..31 of the packed word) or its
// V2 (size in the low 16 bits; ptxas switches to it when a parameter exceeds 16383 bytes;
// sm_100 sets flag bits in the top byte). Offsets are 16-bit, so no size needs more.
ParamInfo read_param(const NvAttr& a, const std::string& where) {
  ParamInfo p;
  p.ordinal = sval_u16(a, 4, where);
  p.offset = sval_u16(a, 6, where);
  const uint32_t word = sval_u32(a, 2, where);
  p.size = a.attr == eiattr::kKparamInfo ? (word >> 18) & 0x3fff : word & 0xffff;
  return p;
}

void read_kernel_info(const Elf& elf, KernelInfo& k) {
  const std::string where = "cubin .nv.info." + k.name;
  const ElfSection* info = elf.find(".nv.info." + k.name);
  if (!info) return;
  uint32_t cbank_size = 0;
  bool have_cbank = false;
  for (const NvAttr& a : read_nvinfo(elf.contents(*info), where)) {
    switch (a.attr) {
      case eiattr::kKparamInfo:
      case eiattr::kKparamInfoV2:
        if (a.format == kEifmtSval) k.params.push_back(read_param(a, where));
        break;
      case eiattr::kParamCbank:
        if (a.format == kEifmtSval) {
          k.param_cbank_offset = sval_u16(a, 4, where);
          cbank_size = sval_u16(a, 6, where);
          have_cbank = true;
        }
        break;
      case eiattr::kCbankParamSize:
        if (a.format == kEifmtHval && !have_cbank) cbank_size = a.value;
        break;
      case eiattr::kMaxThreads:
        if (a.format == kEifmtSval) {
          const uint64_t n = uint64_t{sval_u32(a, 0, where)} * sval_u32(a, 1, where) * sval_u32(a, 2, where);
          k.max_threads = static_cast<int>(std::min<uint64_t>(n, INT32_MAX));
        }
        break;
      case eiattr::kCtaPerCluster:
        if (a.format == kEifmtSval)
          for (size_t i = 0; i < 3; ++i) k.cluster_dims[i] = sval_u32(a, i, where);
        break;
      case eiattr::kCrsStackSize:
        if (a.format == kEifmtSval && k.local_bytes < 0)
          k.local_bytes = static_cast<int>(std::min<uint32_t>(sval_u32(a, 0, where), INT32_MAX));
        break;
      default: break;
    }
  }
  std::sort(k.params.begin(), k.params.end(), [](const ParamInfo& x, const ParamInfo& y) { return x.ordinal < y.ordinal; });
  uint64_t end = 0;
  for (const ParamInfo& p : k.params) end = std::max<uint64_t>(end, uint64_t{p.offset} + p.size);
  k.param_bytes = cbank_size ? cbank_size : static_cast<uint32_t>(std::min<uint64_t>(end, UINT32_MAX));
}

// Entry functions: ptxas marks them in st_other. Older toolchains may not, so fall back to
// the shape of one: a function in its own .text.<name> whose .nv.info.<name> has EXIT offsets
// or a parameter bank (device functions in -rdc objects have neither).
bool is_kernel(const Elf& elf, const ElfSymbol& s, bool any_marked) {
  if (s.type != kSttFunc || s.special || s.section == kShnUndef) return false;
  if (elf.sections[s.section].name != ".text." + std::string(s.name)) return false;
  if (any_marked) return (s.other & kStoCudaEntry) != 0;
  const ElfSection* info = elf.find(".nv.info." + std::string(s.name));
  if (!info) return false;
  for (const NvAttr& a : read_nvinfo(elf.contents(*info), "cubin .nv.info." + std::string(s.name)))
    if (a.attr == eiattr::kExitInstrOffsets || a.attr == eiattr::kParamCbank || a.attr == eiattr::kKparamInfo)
      return true;
  return false;
}

// __device__ in .nv.global / .nv.global.init, __constant__ in .nv.constant<N> (bank 3 in
// practice). Banks with a ".<kernel>" suffix are per-kernel (parameters) and skipped, as are
// compiler-made objects ($str for printf formats) whose names no source can spell.
bool global_section(std::string_view name, bool& constant) {
  if (name == ".nv.global" || name.starts_with(".nv.global.")) {
    constant = false;
    return true;
  }
  constexpr std::string_view kConst = ".nv.constant";
  if (!name.starts_with(kConst) || name.size() == kConst.size()) return false;
  const std::string_view bank = name.substr(kConst.size());
  if (!std::all_of(bank.begin(), bank.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  constant = true;
  return bank != "0";
}

void read_globals(const Elf& elf, Image& img) {
  for (const ElfSymbol& s : elf.symbols) {
    if (s.type != kSttObject || s.special || s.section == kShnUndef) continue;
    if (s.name.empty() || s.name[0] == '$' || s.name[0] == '.') continue;
    const ElfSection& sec = elf.sections[s.section];
    GlobalVar g;
    if (!global_section(sec.name, g.constant)) continue;
    g.name = s.name;
    g.size = s.size;
    g.managed = (s.other & kStoCudaManaged) != 0;
    g.section = sec.name;
    img.globals.push_back(std::move(g));
  }
}

// .nv.compat uses the .nv.info record format; attribute 0x09 is 1 for sm_XXa targets
// (seen for sm_90a and sm_100a; 0 for sm_90, sm_100, sm_100f).
bool read_arch_specific(const Elf& elf) {
  const ElfSection* compat = elf.find(".nv.compat");
  if (!compat) return false;
  for (const NvAttr& a : read_nvinfo(elf.contents(*compat), "cubin .nv.compat"))
    if (a.attr == 0x09 && a.format == kEifmtBval) return a.value != 0;
  return false;
}

}  // namespace

Image parse_cubin(std::span<const uint8_t> image) {
  const Elf elf = read_elf(image, "cubin");
  Image img;
  img.kind = ImageKind::Cubin;
  img.code_kind = ImageKind::Cubin;
  img.sm = sm_from_flags(elf.abi_version, elf.flags);
  img.arch_specific = read_arch_specific(elf);

  const FunctionResources res = read_global_info(elf);
  const bool reserved = has_reserved_smem(elf);
  const bool any_marked = std::any_of(elf.symbols.begin(), elf.symbols.end(), [](const ElfSymbol& s) {
    return s.type == kSttFunc && (s.other & kStoCudaEntry);
  });
  for (uint32_t i = 0; i < elf.symbols.size(); ++i) {
    const ElfSymbol& s = elf.symbols[i];
    if (!is_kernel(elf, s, any_marked)) continue;
    KernelInfo k;
    k.name = s.name;
    k.code_bytes = elf.sections[s.section].size;
    k.registers = lookup(res.regs, i);
    read_kernel_info(elf, k);
    // The stack the driver must provide: the cumulative figure (callees included) when
    // ptxas gives one, else the kernel's own frame.
    for (const auto* m : {&res.max_stack, &res.min_stack, &res.frame}) {
      const int v = lookup(*m, i);
      if (v >= 0) {
        k.local_bytes = v;
        break;
      }
    }
    if (const ElfSection* sh = elf.find(".nv.shared." + k.name)) {
      const uint64_t size = std::min<uint64_t>(sh->size, INT32_MAX);
      k.shared_reserved_bytes = reserved && size >= kReservedSmem ? kReservedSmem : 0;
      k.shared_static_bytes = static_cast<int>(size) - k.shared_reserved_bytes;
    } else {
      k.shared_static_bytes = 0;
    }
    img.kernels.push_back(std::move(k));
  }
  read_globals(elf, img);
  return img;
}

}  // namespace kerncap::cubin
