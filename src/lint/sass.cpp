// SASS text parsing. Both disassemblers print one instruction per line as
//   /*0040*/   @!P0 IMAD.WIDE.U32 R2, R5, 0x4, R2 ;   [/* 0x... */ encoding, cuobjdump]
// nvdisasm -c opens each function with ".section .text.NAME,..." and cuobjdump with
// "Function : NAME". Lines of other shapes (labels, directives, braces) are passed over.
#include "lint/sass.hpp"

#include <cctype>

namespace kerncap::lint {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "/*0040*/" at the start: the rest of the line after it, else npos.
size_t after_address(std::string_view line) {
  if (!starts_with(line, "/*")) return std::string_view::npos;
  const size_t end = line.find("*/");
  if (end == std::string_view::npos || end == 2) return std::string_view::npos;
  for (size_t i = 2; i < end; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(line[i]))) return std::string_view::npos;
  return end + 2;
}

}  // namespace

SassFunctions parse_sass(std::string_view text) {
  SassFunctions fns;
  std::vector<SassInstruction>* cur = nullptr;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    // ".section NAME" (not ".sectioninfo", which -rdc and older SMs print inside a function).
    if (starts_with(line, ".section") && line.size() > 8 && std::isspace(static_cast<unsigned char>(line[8]))) {
      const std::string_view rest = trim(line.substr(8));
      cur = nullptr;
      if (starts_with(rest, ".text.")) {
        const std::string_view name = rest.substr(6, rest.find(',') - 6);
        cur = &fns[std::string(trim(name))];
      }
      continue;
    }
    if (starts_with(line, "Function :")) {
      cur = &fns[std::string(trim(line.substr(10)))];
      continue;
    }
    const size_t at = after_address(line);
    if (at == std::string_view::npos || !cur) continue;
    std::string_view ins = line.substr(at);
    const size_t semi = ins.find(';');
    if (semi == std::string_view::npos) continue;  // data words, not an instruction
    ins = trim(ins.substr(0, semi));
    if (starts_with(ins, "{")) ins = trim(ins.substr(1));  // dual-issue pair braces (older SMs)
    if (ins.empty()) continue;
    SassInstruction si;
    si.text = std::string(ins);
    std::string_view op = ins;
    if (starts_with(op, "@")) op = trim(op.substr(std::min(op.find(' '), op.size())));
    op = op.substr(0, std::min(op.find(' '), op.size()));
    si.opcode = std::string(op);
    si.base = std::string(op.substr(0, std::min(op.find('.'), op.size())));
    cur->push_back(std::move(si));
  }
  return fns;
}

const char* opcode_group(std::string_view b) {
  auto any = [&](std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
      if (b == n) return true;
    return false;
  };
  if (any({"FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "FSET", "FSEL", "FCHK", "MUFU", "FSWZADD", "FFMA32I", "FADD32I", "FMUL32I"}))
    return "fp32";
  if (any({"DFMA", "DADD", "DMUL", "DSETP", "DMNMX"})) return "fp64";
  if (any({"HFMA2", "HADD2", "HMUL2", "HSETP2", "HMNMX2"})) return "fp16";
  if (any({"HMMA", "IMMA", "DMMA", "BMMA"})) return "mma";
  if (any({"HGMMA", "IGMMA", "QGMMA", "BGMMA", "WARPGROUP"})) return "wgmma";
  if (any({"LDG", "STG", "LD", "ST", "LDGSTS", "LDGDEPBAR", "RED", "ATOMG", "ATOM"})) return "global";
  if (any({"LDS", "STS", "LDSM", "STSM", "ATOMS"})) return "shared";
  if (any({"LDL", "STL"})) return "local";
  if (any({"UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "UBLKRED", "UBLKPF", "UTMACCTL", "UTMACMDFLUSH"})) return "tma";
  if (any({"BAR", "BSYNC", "SYNCS", "MEMBAR", "DEPBAR", "ERRBAR", "CCTL", "ARRIVES", "WARPSYNC"})) return "barrier";
  if (any({"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSSY", "BREAK", "YIELD", "NOP"})) return "control";
  return "";
}

InstructionMix instruction_mix(const std::vector<SassInstruction>& code) {
  InstructionMix m;
  for (const SassInstruction& i : code) {
    ++m.total;
    ++m.by_opcode[i.base];
    if (const char* g = opcode_group(i.base); *g) ++m.groups[g];
    if (i.base == "STL") ++m.local_stores;
    if (i.base == "LDL") ++m.local_loads;
    if (i.base == "BAR") ++m.barriers;
  }
  return m;
}

}  // namespace kerncap::lint
