// The checks of `kerncap lint`, in report order: resources, occupancy, instruction mix,
// patterns. A limit the user did not set gives an informational line, never a failure.
#include "lint/lint.hpp"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "common/error.hpp"
#include "lint/disassembler.hpp"

namespace kerncap::lint {

namespace {

void limit_check(LintReport& r, const std::string& name, int64_t value, const std::optional<int64_t>& limit,
                 const std::string& unit) {
  Check c{name, Status::Info, fmt::format("{}{}", value, unit)};
  if (limit) {
    c.status = value <= *limit ? Status::Pass : Status::Fail;
    c.detail += fmt::format(" (limit {})", *limit);
  }
  r.checks.push_back(std::move(c));
}

// The first line of `text` the regex finds, or "".
std::string first_match(const std::regex& re, const std::vector<std::string>& lines) {
  for (const std::string& l : lines)
    if (std::regex_search(l, re)) return l;
  return "";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

std::string mix_summary(const InstructionMix& m) {
  std::string s = fmt::format("{} instructions", m.total);
  for (const char* g : {"fp32", "fp64", "fp16", "mma", "wgmma", "global", "shared", "local", "tma", "barrier"})
    if (auto it = m.groups.find(g); it != m.groups.end()) s += fmt::format(", {} {}", g, it->second);
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [op, n] : m.by_opcode) top.emplace_back(n, op);
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  s += "; top:";
  for (size_t i = 0; i < top.size() && i < 8; ++i) s += fmt::format(" {} {}", top[i].second, top[i].first);
  return s;
}

void pattern_checks(LintReport& r, const format::ArtifactChecks& ac, const std::vector<std::string>& sass_lines,
                    const std::vector<std::string>& ptx_lines, bool have_sass) {
  const bool have_ptx = !ptx_lines.empty();
  const std::string over = have_sass && have_ptx ? "SASS and PTX" : have_sass ? "SASS" : "PTX";
  auto find = [&](const std::regex& re) {
    std::string m = first_match(re, sass_lines);
    if (m.empty()) m = first_match(re, ptx_lines);
    return m;
  };
  for (const std::string& p : ac.required_patterns) {
    Check c{fmt::format("required /{}/", p), Status::Fail, ""};
    if (!have_sass && !have_ptx) {
      c.detail = "no SASS or PTX to search (disassembly skipped or unavailable)";
    } else if (std::string m = find(std::regex(p, std::regex::ECMAScript)); !m.empty()) {
      c.status = Status::Pass;
      c.detail = fmt::format("found in {}: {}", over, m);
    } else {
      c.detail = fmt::format("not found in {}", over);
    }
    r.checks.push_back(std::move(c));
  }
  for (const std::string& p : ac.forbidden_patterns) {
    Check c{fmt::format("forbidden /{}/", p), Status::Pass, ""};
    if (!have_sass && !have_ptx) {
      c.status = Status::Fail;
      c.detail = "no SASS or PTX to search (disassembly skipped or unavailable)";
    } else if (std::string m = find(std::regex(p, std::regex::ECMAScript)); !m.empty()) {
      c.status = Status::Fail;
      c.detail = fmt::format("found in {}: {}", over, m);
    } else {
      c.detail = fmt::format("absent from {}", over);
    }
    r.checks.push_back(std::move(c));
  }
}

}  // namespace

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass: return "pass";
    case Status::Fail: return "fail";
    default: return "info";
  }
}

bool LintReport::passed() const {
  for (const Check& c : checks)
    if (c.status == Status::Fail) return false;
  return true;
}

LintReport lint(const format::Capture& capture, const LintOptions& opt) {
  const format::Manifest& m = capture.manifest;
  LintReport r;
  r.kernel = m.mangled_name;
  r.sm = m.cc_major * 10 + m.cc_minor;
  r.image = opt.cubin.empty() ? capture.path(m.image_file).string() : opt.cubin;
  const std::vector<uint8_t> bytes = opt.cubin.empty() ? capture.read_image() : format::read_file(r.image);
  r.image_kind = cubin::to_string(cubin::detect_kind(bytes));
  const CodeObjects code = select_code(bytes, r.sm);
  const cubin::KernelInfo* k = code.image.find_kernel(m.mangled_name);
  if (!k)
    input_error(fmt::format("{} does not hold the captured kernel {}; is it the right variant?", r.image, m.mangled_name));
  const bool have_resources = code.image.code_kind == cubin::ImageKind::Cubin;
  if (have_resources) {
    r.resources = *k;
    r.code_sm = code.image.sm;
  }

  r.launch.threads_per_block = m.block[0] * m.block[1] * m.block[2];
  r.launch.dynamic_shared = m.shared_mem_bytes;
  std::vector<std::string> sass_lines;
  if (opt.sass && !code.cubin.empty()) {
    const Disassembly d = disassemble(code.cubin, opt.disassembler);
    r.disassembler = d.tool;
    const SassFunctions fns = parse_sass(d.text);
    const auto it = fns.find(m.mangled_name);
    if (it == fns.end())
      input_error(fmt::format("{} printed no code for {}; is its output format a new one?", d.tool, m.mangled_name));
    r.mix = instruction_mix(it->second);
    for (const SassInstruction& i : it->second) sass_lines.push_back(i.text);
  }

  const format::ArtifactChecks& ac = opt.checks;
  if (!have_resources) {
    r.checks.push_back({"resources", ac.max_registers || ac.max_local_memory ? Status::Fail : Status::Info,
                        "the image holds only PTX for this GPU: no registers, stack or shared sizes until it is compiled"});
  } else {
    limit_check(r, "registers", k->registers, ac.max_registers, " per thread");
    limit_check(r, "local memory", k->local_bytes < 0 ? 0 : k->local_bytes, ac.max_local_memory, " B stack per thread");
    r.launch.registers_per_thread = k->registers;
    r.launch.static_shared = static_cast<uint64_t>(std::max(k->shared_static_bytes, 0));
    r.checks.push_back({"shared memory", Status::Info,
                        fmt::format("{} B static + {} B dynamic per block (+{} B reserved by the system)",
                                    r.launch.static_shared, r.launch.dynamic_shared,
                                    r.sm >= 80 ? 1024 : 0)});
  }
  if (r.mix) {
    limit_check(r, "spills", static_cast<int64_t>(r.mix->local_stores + r.mix->local_loads), ac.max_spills,
                fmt::format(" local memory instructions (STL {}, LDL {}; local arrays count too)", r.mix->local_stores,
                            r.mix->local_loads));
    r.checks.push_back({"barriers", Status::Info, fmt::format("{} BAR instructions", r.mix->barriers)});
  } else if (ac.max_spills) {
    r.checks.push_back({"spills", Status::Fail, "needs the SASS (disassembly skipped or no cubin)"});
  }
  std::optional<SmLimits> limits;
  try {
    limits = sm_limits(r.sm);
  } catch (const Error& e) {
    r.checks.push_back({"occupancy", Status::Info, e.what()});
  }
  if (have_resources && limits) {
    const Occupancy o = occupancy(r.launch, *limits);
    r.occupancy = o;
    Check c{"occupancy", o.blocks_per_sm ? Status::Info : Status::Fail, ""};
    if (o.blocks_per_sm)
      c.detail = fmt::format("{} blocks of {} threads per SM, {}/{} warps ({:.0f}%), limited by {}", o.blocks_per_sm,
                             r.launch.threads_per_block, o.active_warps, limits->max_warps_per_sm,
                             o.occupancy * 100, o.limited_by);
    else
      c.detail = "the captured launch cannot run: " + o.why_zero;
    r.checks.push_back(std::move(c));
  }
  if (r.mix) r.checks.push_back({"instruction mix", Status::Info, mix_summary(*r.mix)});
  pattern_checks(r, ac, sass_lines, split_lines(code.ptx), r.mix.has_value());
  return r;
}

}  // namespace kerncap::lint
