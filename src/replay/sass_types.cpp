// The backward walk of sass_types.hpp. Each instruction is split once into predicate, opcode
// modifiers and operands; a register's value is the combination of its nearest definitions
// above the use (a predicated one does not hide the one before it).
#include "replay/sass_types.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <string_view>

namespace kerncap::replay {

using compare::DType;

namespace {

constexpr int kMaxDepth = 12;  // moves and selects followed before giving up

struct Reg {
  bool uniform = false;  // UR (else R)
  int n = -1;            // -1: RZ/URZ
  bool zero() const { return n < 0; }
  bool operator==(const Reg&) const = default;
};

struct Ins {
  bool predicated = false;
  std::string base;               // "STG"
  std::vector<std::string> mods;  // {"E", "64"}
  std::vector<std::string> ops;   // operands, trimmed
  const std::string* text = nullptr;
  bool mod(std::string_view m) const { return std::find(mods.begin(), mods.end(), m) != mods.end(); }
  bool mod_prefix(std::string_view m) const {
    return std::any_of(mods.begin(), mods.end(), [&](const std::string& x) { return x.starts_with(m); });
  }
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Ins split(const lint::SassInstruction& si) {
  Ins ins;
  ins.text = &si.text;
  std::string_view t = trim(si.text);
  if (t.starts_with("@")) {
    ins.predicated = t.substr(0, 4) != "@PT " && t.substr(0, 5) != "@UPT ";
    t = trim(t.substr(std::min(t.find(' '), t.size())));
  }
  const std::string_view op = t.substr(0, std::min(t.find(' '), t.size()));
  t = trim(t.substr(op.size()));
  size_t dot = op.find('.');
  ins.base = std::string(op.substr(0, dot));
  while (dot != std::string_view::npos) {
    const size_t next = op.find('.', dot + 1);
    ins.mods.emplace_back(op.substr(dot + 1, next == std::string_view::npos ? next : next - dot - 1));
    dot = next;
  }
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= t.size(); ++i) {
    if (i < t.size() && (t[i] == '[' || t[i] == '(')) ++depth;
    if (i < t.size() && (t[i] == ']' || t[i] == ')')) --depth;
    if (i == t.size() || (t[i] == ',' && depth == 0)) {
      const std::string_view o = trim(t.substr(start, i - start));
      if (!o.empty()) ins.ops.emplace_back(o);
      start = i + 1;
    }
  }
  return ins;
}

// "R12", "-R12.reuse", "|R3|", "R2.H0_H0", "URZ": the register; nothing for other operands.
std::optional<Reg> reg_of(std::string_view o) {
  while (!o.empty() && (o.front() == '-' || o.front() == '|' || o.front() == '!' || o.front() == '~')) o.remove_prefix(1);
  Reg r;
  if (o.starts_with("UR")) {
    r.uniform = true;
    o.remove_prefix(2);
  } else if (o.starts_with("R")) {
    o.remove_prefix(1);
  } else {
    return std::nullopt;
  }
  if (o.starts_with("Z") && (o.size() == 1 || o[1] == '.' || o[1] == '|')) return r;
  int n = 0;
  const auto [end, ec] = std::from_chars(o.data(), o.data() + o.size(), n);
  if (ec != std::errc() || end == o.data()) return std::nullopt;
  if (end != o.data() + o.size() && *end != '.' && *end != '|') return std::nullopt;
  r.n = n;
  return r;
}

bool is_predicate(std::string_view o) {
  while (!o.empty() && o.front() == '!') o.remove_prefix(1);
  return o == "PT" || o == "UPT" || ((o.starts_with("P") || o.starts_with("UP")) && o.size() <= 3 &&
                                     std::isdigit(static_cast<unsigned char>(o.back())));
}

// "c[0x0][0x218]": the offset in bank 0.
std::optional<uint32_t> bank0_offset(std::string_view o) {
  if (!o.starts_with("c[0x0][0x")) return std::nullopt;
  o.remove_prefix(9);
  uint32_t v = 0;
  const auto [end, ec] = std::from_chars(o.data(), o.data() + o.size(), v, 16);
  if (ec != std::errc() || end == o.data() || end == o.data() + o.size() || *end != ']') return std::nullopt;
  return v;
}

// "c[0x0][UR4+0x254]": the offset added to the index register in bank 0.
std::optional<uint32_t> indexed_bank0_offset(std::string_view o) {
  if (!o.starts_with("c[0x0][") || o.size() < 8 || o[7] == '0') return std::nullopt;
  const size_t plus = o.find("+0x");
  if (plus == std::string_view::npos) return std::nullopt;
  return bank0_offset(std::string("c[0x0][") + std::string(o.substr(plus + 1)));
}

// The register of an address operand: the last bracket group's first register
// ("desc[UR4][R4.64+0x10]" -> R4).
std::optional<Reg> address_reg(std::string_view o) {
  const size_t open = o.rfind('[');
  if (open == std::string_view::npos) return std::nullopt;
  std::string_view in = o.substr(open + 1);
  in = in.substr(0, std::min(in.find_first_of("+]"), in.size()));
  return reg_of(trim(in));
}

ValueType zero() { return {ValueKind::Zero, DType::Bytes}; }
ValueType unknown() { return {ValueKind::Unknown, DType::Bytes}; }
ValueType integer() { return {ValueKind::Integer, DType::Bytes}; }
ValueType floating(DType d) { return {ValueKind::Float, d}; }

ValueType combine(const ValueType& a, const ValueType& b) {
  if (a.kind == ValueKind::Zero) return b;
  if (b.kind == ValueKind::Zero) return a;
  return a == b ? a : unknown();
}

bool any_of(std::string_view b, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), b) != names.end();
}

// The floating-point type a modifier list names first (F2F.F16.F32 -> fp16: the destination).
std::optional<DType> first_float_mod(const Ins& ins) {
  for (const std::string& m : ins.mods) {
    if (m == "F64") return DType::F64;
    if (m == "F32") return DType::F32;
    if (m == "F16" || m == "F16x2" || m == "F16_V2") return DType::F16;
    if (m == "BF16" || m == "BF16x2" || m == "BF16_V2") return DType::BF16;
    if (m == "E4M3") return DType::F8E4M3;
    if (m == "E5M2") return DType::F8E5M2;
  }
  return std::nullopt;
}

uint32_t bits(DType d) { return static_cast<uint32_t>(compare::dtype_size(d)) * 8; }

// Registers an instruction writes: its first operand when that is a register (after a leading
// predicate destination: ATOM PT, R6, ...), and how many consecutive registers.
struct Def {
  Reg reg;
  int count = 0;
};

int wide_count(const Ins& ins) {
  if (ins.mod("256")) return 8;
  if (ins.mod("128")) return 4;
  if (ins.mod("64") || ins.mod("WIDE")) return 2;
  return 1;
}

// HMMA.16816.F32.BF16 / HGMMA.64x128x16.F32: registers of the accumulator a thread holds.
int mma_count(const Ins& ins) {
  const std::optional<DType> acc = first_float_mod(ins);
  if (ins.base == "DMMA") return 2;
  if (ins.base == "HGMMA" || ins.base == "QGMMA" || ins.base == "IGMMA" || ins.base == "BGMMA") {
    unsigned n = 0;
    if (!ins.mods.empty()) {
      const std::string& shape = ins.mods.front();  // 64xNxK
      const size_t x = shape.find('x');
      if (x != std::string::npos) std::from_chars(shape.data() + x + 1, shape.data() + shape.size(), n);
    }
    const unsigned per = acc && *acc != DType::F32 ? 4 : 2;  // columns per register, per thread of 128
    return n ? static_cast<int>(std::max(1u, n / per)) : 1;
  }
  return acc && *acc != DType::F32 ? 2 : 4;  // HMMA/IMMA
}

std::optional<Def> def_of(const Ins& ins) {
  if (ins.ops.empty()) return std::nullopt;
  size_t k = 0;
  if (is_predicate(ins.ops[0]) && ins.ops.size() > 1) k = 1;  // ATOM PT, R6, ...; SHFL.BFLY PT, R5, ...
  const std::optional<Reg> r = reg_of(ins.ops[k]);
  if (!r || r->zero()) return std::nullopt;
  if (any_of(ins.base, {"HMMA", "HGMMA", "QGMMA", "IGMMA", "BGMMA", "IMMA", "DMMA"})) return Def{*r, mma_count(ins)};
  int count = wide_count(ins);
  if (any_of(ins.base, {"DADD", "DFMA", "DMUL", "DMNMX", "CS2R"}) && !ins.mod("32")) count = 2;
  if ((ins.base == "F2F" || ins.base == "I2F" || ins.base == "FRND") && first_float_mod(ins) == DType::F64) count = 2;
  return Def{*r, count};
}

bool writes(const Def& d, const Reg& r) { return d.reg.uniform == r.uniform && r.n >= d.reg.n && r.n < d.reg.n + d.count; }

// Every source operand is RZ or an immediate: a constant materialised by an arithmetic unit
// (HFMA2.MMA R7, -RZ, RZ, 0, 5.96e-08 sets R7 to 1).
bool constant_sources(const Ins& ins, size_t first) {
  for (size_t i = first; i < ins.ops.size(); ++i) {
    const std::optional<Reg> r = reg_of(ins.ops[i]);
    if (r && !r->zero()) return false;
    if (!r && (ins.ops[i].starts_with("c[") || ins.ops[i].starts_with("SR_"))) return false;
  }
  return true;
}

class Walker {
 public:
  Walker(const std::vector<Ins>& code, uint32_t param_base) : code_(code), param_base_(param_base) {}

  // The value register r holds just before instruction `at`.
  ValueType value(const Reg& r, size_t at, int depth) const {
    if (r.zero()) return zero();
    if (depth > kMaxDepth) return unknown();
    ValueType acc = zero();
    for (size_t i = at; i-- > 0;) {
      const std::optional<Def> d = def_of(code_[i]);
      if (!d || !writes(*d, r)) continue;
      acc = combine(acc, def_value(i, depth + 1));
      if (!code_[i].predicated) return acc;
      if (acc.kind == ValueKind::Unknown) return acc;
    }
    return unknown();  // not defined above (a loop-carried value, a parameter register)
  }

  // The parameter word an address register was computed from.
  std::optional<uint32_t> param(const Reg& r, size_t at, int depth) const {
    if (r.zero() || depth > kMaxDepth || !param_base_) return std::nullopt;
    for (size_t i = at; i-- > 0;) {
      const std::optional<Def> d = def_of(code_[i]);
      if (!d || !writes(*d, r)) continue;
      if (code_[i].predicated || d->reg.n != r.n) return std::nullopt;
      return def_param(i, depth + 1);
    }
    return std::nullopt;
  }

  // Whether the value register r holds before `at` was made by an order-dependent float
  // operation (an add, a multiply: not a min/max), through byte moves and selects.
  bool float_arithmetic(const Reg& r, size_t at, int depth) const {
    if (r.zero() || depth > 3) return false;
    for (size_t i = at; i-- > 0;) {
      const std::optional<Def> d = def_of(code_[i]);
      if (!d || !writes(*d, r)) continue;
      const Ins& ins = code_[i];
      if (any_of(ins.base, {"FADD", "FFMA", "FMUL", "DADD", "DFMA", "DMUL", "HADD2", "HFMA2", "HMUL2", "FADD32I",
                            "FFMA32I", "FMUL32I"}))
        return !constant_sources(ins, 1);
      if (any_of(ins.base, {"PRMT", "SEL", "LOP3", "MOV", "IMAD"}))
        for (size_t k = 1; k < ins.ops.size(); ++k)
          if (const std::optional<Reg> s = reg_of(ins.ops[k]); s && float_arithmetic(*s, i, depth + 1)) return true;
      if (!ins.predicated) return false;
    }
    return false;
  }

  void set_shared(ValueType t) { shared_ = t; }

 private:
  ValueType follow(const Ins& ins, size_t i, size_t first, int depth) const {
    ValueType acc = zero();
    bool any = false;
    for (size_t k = first; k < ins.ops.size(); ++k) {
      const std::optional<Reg> s = reg_of(ins.ops[k]);
      if (!s) {
        if (is_predicate(ins.ops[k])) continue;
        return unknown();  // a non-zero immediate or a constant-bank word: no type of its own
      }
      any = true;
      acc = combine(acc, value(*s, i, depth));
    }
    return any ? acc : unknown();
  }

  ValueType def_value(size_t i, int depth) const {
    const Ins& ins = code_[i];
    const std::string& b = ins.base;
    const std::optional<DType> f = first_float_mod(ins);
    if (any_of(b, {"FADD", "FFMA", "FMUL", "FMNMX", "FSEL", "FADD32I", "FFMA32I", "FMUL32I", "FSWZADD", "FRND"}))
      return floating(f == DType::F64 ? DType::F64 : DType::F32);
    if (b == "MUFU") return ins.mod_prefix("RSQ64") || ins.mod_prefix("RCP64") ? unknown() : floating(DType::F32);
    if (any_of(b, {"DADD", "DFMA", "DMUL", "DMNMX"})) return floating(DType::F64);
    if (any_of(b, {"HADD2", "HFMA2", "HMUL2", "HMNMX2"})) {
      if (constant_sources(ins, 1)) return unknown();  // a constant (or zero) made by the half unit
      if (ins.mod("F32")) return floating(DType::F32);  // HADD2.F32: a half widened to fp32
      return floating(ins.mod_prefix("BF16") ? DType::BF16 : DType::F16);
    }
    if (b == "F2F" || b == "F2FP" || b == "I2F" || b == "I2FP") {
      if (b == "I2F" && !f) return floating(DType::F32);
      if (b == "F2FP" && !f && ins.mod_prefix("PACK_AB")) return floating(DType::F16);  // sm_80: halves by default
      return f ? floating(*f) : unknown();
    }
    if (any_of(b, {"HMMA", "HGMMA", "QGMMA", "DMMA"})) {
      if (b == "DMMA") return floating(DType::F64);
      return f ? floating(*f) : unknown();
    }
    if (any_of(b, {"IMMA", "IGMMA", "BGMMA"})) return integer();
    if (b == "CS2R") return ins.ops.size() > 1 && ins.ops[1] == "SRZ" ? zero() : integer();
    if (b == "LDS") return shared_;
    if (b == "MOV" || b == "UMOV" || b == "R2UR" || b == "S2R" || b == "S2UR") {
      if (b == "S2R" || b == "S2UR") return integer();
      return follow(ins, i, 1, depth);
    }
    if (b == "IMAD" && ins.mod("MOV")) {
      // IMAD.MOV.U32 Rd, RZ, RZ, X is a move of X; IMAD.MOV Rd, RZ, RZ, -X a negation.
      if (ins.ops.size() == 4 && ins.ops[3].starts_with("-")) return integer();
      return ins.ops.size() == 4 ? follow(ins, i, 3, depth) : unknown();
    }
    if (b == "SHFL") {
      // SHFL.BFLY PT, Rd, Ra, ...: Ra's value from another lane.
      const size_t src = is_predicate(ins.ops[0]) ? 2 : 1;
      if (src >= ins.ops.size()) return unknown();
      const std::optional<Reg> s = reg_of(ins.ops[src]);
      return s ? value(*s, i, depth) : unknown();
    }
    if (b == "SEL" || b == "USEL" || b == "PRMT") return follow(ins, i, 1, depth);
    if (b == "F2I" || b == "F2IP" || b == "I2I" || b == "I2IP" || b == "FLO" || b == "POPC" || b == "BREV" ||
        b == "IABS" || b == "IMNMX" || b == "VIMNMX" || b == "VIADD" || b == "VIADDMNMX" || b == "IADD3" ||
        b == "IADD" || b == "IMAD" || b == "IMUL" || b == "ISCADD" || b == "LEA" || b == "LOP3" || b == "LOP" ||
        b == "SHF" || b == "SHL" || b == "SHR" || b == "BMSK" || b == "SGXT" || b == "IDP" || b == "IDP4A" ||
        b == "REDUX" || b == "VOTE" || b == "VOTEU" || b == "MATCH" || b == "UIADD3" || b == "UIMAD" ||
        b == "ULOP3" || b == "USHF" || b == "ULEA" || b == "UPOPC" || b == "UFLO" || b == "UBREV" || b == "BFE" ||
        b == "BFI")
      return integer();
    return unknown();  // loads (LDG, LD, LDL, LDC), everything not listed
  }

  std::optional<uint32_t> from_operand(const std::string& o, size_t i, int depth) const {
    if (const std::optional<uint32_t> off = bank0_offset(o)) {
      if (*off < param_base_) return kDriverConstant;
      return *off - param_base_;
    }
    // c[0x0][UR4+0x254]: a word of the driver's constants picked per cluster (sm_100's grid
    // barrier); indexed words of the parameters are not followed.
    if (const std::optional<uint32_t> off = indexed_bank0_offset(o); off && *off < param_base_) return kDriverConstant;
    const std::optional<Reg> r = reg_of(o);
    if (!r || r->zero() || o.starts_with("-")) return std::nullopt;
    return param(*r, i, depth);
  }

  std::optional<uint32_t> def_param(size_t i, int depth) const {
    const Ins& ins = code_[i];
    const std::string& b = ins.base;
    // Operands after the destination, predicates left out.
    std::vector<const std::string*> src;
    for (size_t k = 1; k < ins.ops.size(); ++k)
      if (!is_predicate(ins.ops[k])) src.push_back(&ins.ops[k]);
    if (b == "LDC" || b == "ULDC" || b == "LDCU") return src.empty() ? std::nullopt : from_operand(*src[0], i, depth);
    if ((b == "IMAD" || b == "UIMAD") && ins.mod("WIDE") && src.size() == 3)
      return from_operand(*src[2], i, depth);  // a * b + base
    if ((b == "LEA" || b == "ULEA") && !ins.mod("HI") && src.size() >= 2) return from_operand(*src[1], i, depth);
    if ((b == "MOV" || b == "UMOV" || b == "R2UR") && src.size() == 1) return from_operand(*src[0], i, depth);
    if (b == "IMAD" && ins.mod("MOV") && src.size() == 3) return from_operand(*src[2], i, depth);
    // IMAD.U32 R14, RZ, RZ, UR5: 0 * 0 + c, a move too.
    if (b == "IMAD" && !ins.mod("WIDE") && !ins.mod("HI") && src.size() == 3 && (*src[0] == "RZ" || *src[1] == "RZ"))
      return from_operand(*src[2], i, depth);
    if (b == "VIADD" && !src.empty()) return from_operand(*src[0], i, depth);
    if ((b == "IADD3" || b == "UIADD3" || b == "IADD") && !ins.mod("X")) {
      // One of the addends is the pointer: the one that traces to a parameter, if only one does.
      // A driver constant added is an offset (a launch dimension), never the pointer here.
      std::set<uint32_t> found;
      for (const std::string* o : src)
        if (const std::optional<uint32_t> p = from_operand(*o, i, depth); p && *p != kDriverConstant) found.insert(*p);
      if (found.size() == 1) return *found.begin();
    }
    return std::nullopt;
  }

  const std::vector<Ins>& code_;
  uint32_t param_base_;
  ValueType shared_ = unknown();
};

uint32_t store_width(const Ins& ins) {
  if (ins.mod("U8") || ins.mod("S8")) return 8;
  if (ins.mod("U16") || ins.mod("S16")) return 16;
  if (ins.mod("256")) return 256;
  if (ins.mod("128")) return 128;
  if (ins.mod("64") || ins.mod("F64")) return 64;
  return 32;
}

// The value of `width` bits held from register `data` on: each 32-bit register's value,
// combined; a type that does not fit the width (half a double, an fp32 stored as 16 bits) is
// unknown.
ValueType stored_value(const Walker& w, const std::string& data, uint32_t width, size_t at) {
  const std::optional<Reg> r = reg_of(data);
  if (!r) return unknown();
  if (r->zero()) return zero();
  ValueType v = zero();
  for (uint32_t k = 0; k < std::max(1u, width / 32); ++k) v = combine(v, w.value(Reg{r->uniform, r->n + static_cast<int>(k)}, at, 0));
  if (v.kind == ValueKind::Float) {
    const uint32_t b = bits(v.dtype);
    if (width % b != 0) return unknown();
    // A double in two registers: the pair must start at the double (even register of the def).
    if (v.dtype == DType::F64 && w.value(Reg{r->uniform, r->n}, at, 0) != v) return unknown();
  }
  return v;
}

bool shared_opcode(std::string_view b) { return b == "STS" || b == "ATOMS" || b == "STSM"; }

}  // namespace

std::string to_string(const ValueType& v) {
  switch (v.kind) {
    case ValueKind::Zero: return "zero";
    case ValueKind::Unknown: return "unknown";
    case ValueKind::Integer: return "integer";
    case ValueKind::Float: return compare::to_string(v.dtype);
  }
  return "unknown";
}

// A call of one of nvcc's built-in subroutines that store nothing: the slow paths of division,
// remainder, square root and reciprocal (`$__internal_0_$__cuda_sm20_div_rn_f64_full` in a
// whole-program cubin, where its code follows the kernel's in the same section;
// `__cuda_sm20_rem_s64` in its own section under -rdc) and the warp and block synchronisation
// wrappers -rdc code calls (`__cuda_sm70_barrier_sync_0`). They work on registers only, so they
// hide no store: a double division or a 64-bit index remainder (CuPy's elementwise kernels,
// cooperative solvers) must not leave a kernel untyped. The value an arithmetic one returns is
// of the type of the inline path beside it, which the walk sees. Other built-ins (WMMA loads
// and stores under -rdc) and the program's own functions still count as calls.
bool builtin_arithmetic_call(const Ins& x) {
  if (x.base != "CALL" || x.ops.empty()) return false;
  std::string_view target = x.ops.front();
  for (const std::string_view wrap : {"`(", "(", "`"})
    if (target.starts_with(wrap)) target.remove_prefix(wrap.size());
  if (target.starts_with("$__internal_")) target.remove_prefix(target.find("$__cuda_") + 1);
  if (!target.starts_with("__cuda_sm")) return false;
  for (const std::string_view op : {"_div_", "_rem_", "_sqrt_", "_rcp_", "_dsqrt_", "_drcp_", "_ddiv_", "_barrier_",
                                    "_warpsync", "_shflsync", "_votesync", "_matchsync"})
    if (target.find(op) != std::string_view::npos) return true;
  return false;
}

SassFacts analyse_sass(const std::vector<lint::SassInstruction>& code, uint32_t param_base) {
  std::vector<Ins> ins;
  ins.reserve(code.size());
  for (const auto& si : code) ins.push_back(split(si));
  Walker w(ins, param_base);
  SassFacts f;

  // What shared memory holds, for values loaded back from it (LDS): the one float type of
  // everything stored there, else unknown. Asynchronous copies in (LDGSTS, TMA loads) bring
  // data of no known type.
  ValueType shared = zero();
  for (size_t i = 0; i < ins.size(); ++i) {
    const Ins& x = ins[i];
    if (any_of(x.base, {"LDGSTS", "UTMALDG", "UBLKCP"})) shared = unknown();
    if (!shared_opcode(x.base) || x.ops.empty()) continue;
    if (x.base == "ATOMS" && !x.mod("CAS") && !x.mod("CAST") && !x.mod("EXCH")) {
      const std::optional<DType> d = first_float_mod(x);
      shared = combine(shared, d ? floating(*d) : integer());
      continue;
    }
    const uint32_t width = x.base == "STSM" ? 32 : store_width(x);
    // LDS inside these chains is a copy within shared memory: neutral.
    w.set_shared(zero());
    shared = combine(shared, stored_value(w, x.ops.back(), width, i));
  }
  w.set_shared(shared.kind == ValueKind::Float ? shared : unknown());

  for (size_t i = 0; i < ins.size(); ++i) {
    const Ins& x = ins[i];
    if (x.base == "CALL" && !builtin_arithmetic_call(x)) f.calls = true;
    const bool atom = any_of(x.base, {"ATOM", "ATOMG", "ATOMS", "RED", "REDG"});
    const bool cas = atom && (x.mod("CAS") || x.mod("CAST"));
    const std::optional<DType> atom_type = atom && !cas ? first_float_mod(x) : std::nullopt;
    // Float atomics: a typed add, or a compare-and-swap loop whose new value is float arithmetic.
    if (atom && ((atom_type && x.mod("ADD")) ||
                 (cas && !x.ops.empty() && [&] {
                   const std::optional<Reg> nv = reg_of(x.ops.back());
                   return nv && w.float_arithmetic(*nv, i, 0);
                 }())))
      f.float_atomics.push_back(*x.text);
    if (x.base == "ATOMS") continue;  // shared memory: no region of the capture
    const bool global_store = any_of(x.base, {"STG", "ST", "RED", "REDG", "ATOM", "ATOMG"});
    const bool bulk = any_of(x.base, {"UTMASTG", "UTMAREDG", "UBLKCP", "UBLKRED"});
    if (!global_store && !bulk) continue;
    SassStore s;
    s.text = *x.text;
    s.atomic = atom;
    if (bulk) {
      // From shared memory to global (or the reverse, for UBLKCP: then this store is only
      // pessimistic): typed as what shared memory holds.
      s.value = shared.kind == ValueKind::Float && x.base == "UTMASTG" ? shared : unknown();
      f.stores.push_back(std::move(s));
      continue;
    }
    auto addr = std::find_if(x.ops.begin(), x.ops.end(), [](const std::string& o) { return o.find('[') != std::string::npos; });
    if (addr != x.ops.end())
      if (const std::optional<Reg> r = address_reg(*addr)) s.param = w.param(*r, i, 0);
    if (s.param == kDriverConstant) {
      s.param.reset();
      s.driver_memory = true;
    }
    s.width = store_width(x);
    if (atom_type) {
      const DType t = atom_type.value_or(DType::F32);
      s.value = floating(t);
      s.width = std::max({32u, bits(t), s.width});  // .F16x2: two halves in 32 bits
    } else if (atom && !cas && !x.mod("EXCH")) {
      s.value = integer();  // an integer add, min, max, and, or...
    } else if (!x.ops.empty() && addr != x.ops.end() && addr + 1 != x.ops.end()) {
      s.value = stored_value(w, x.ops.back(), s.width, i);
    }
    f.stores.push_back(std::move(s));
  }
  return f;
}

}  // namespace kerncap::replay
