// The lint report as text (one line per check, then the verdict) and as JSON.
#include <fmt/format.h>

#include "lint/lint.hpp"

namespace kerncap::lint {

std::string result_line(const LintReport& r) { return fmt::format("Result: {}", r.passed() ? "PASS" : "FAIL"); }

std::string to_text(const LintReport& r) {
  std::string s = fmt::format("kernel  {}\nimage   {} ({}{})\nlaunch  block of {} threads, {} B dynamic shared, sm_{}\n",
                              r.kernel, r.image, r.image_kind,
                              r.code_sm ? fmt::format(", sm_{} cubin", r.code_sm) : std::string(", PTX only"),
                              r.launch.threads_per_block, r.launch.dynamic_shared, r.sm);
  if (!r.disassembler.empty()) s += fmt::format("sass    {}\n", r.disassembler);
  for (const Check& c : r.checks) {
    const char* tag = c.status == Status::Pass ? "PASS" : c.status == Status::Fail ? "FAIL" : "info";
    s += fmt::format("  {:<4}  {:<16} {}\n", tag, c.name, c.detail);
  }
  s += result_line(r) + "\n";
  return s;
}

nlohmann::json to_json(const LintReport& r) {
  nlohmann::json j;
  j["kernel"] = r.kernel;
  j["image"] = r.image;
  j["image_kind"] = r.image_kind;
  j["sm"] = r.sm;
  j["code_sm"] = r.code_sm;
  if (r.resources) {
    const cubin::KernelInfo& k = *r.resources;
    j["resources"] = {{"registers", k.registers},
                      {"local_bytes", std::max(k.local_bytes, 0)},
                      {"shared_static_bytes", std::max(k.shared_static_bytes, 0)},
                      {"shared_dynamic_bytes", r.launch.dynamic_shared},
                      {"max_threads", k.max_threads},
                      {"code_bytes", k.code_bytes}};
  }
  j["launch"] = {{"threads_per_block", r.launch.threads_per_block}, {"dynamic_shared", r.launch.dynamic_shared}};
  if (r.occupancy) {
    const Occupancy& o = *r.occupancy;
    j["occupancy"] = {{"blocks_per_sm", o.blocks_per_sm},
                      {"active_warps", o.active_warps},
                      {"occupancy", o.occupancy},
                      {"limited_by", o.limited_by},
                      {"limits", {{"warps", o.limit_warps}, {"registers", o.limit_registers},
                                  {"shared", o.limit_shared}, {"blocks", o.limit_blocks}}},
                      {"shared_per_block", o.shared_per_block},
                      {"registers_per_warp", o.registers_per_warp}};
  }
  if (r.mix) {
    j["sass"] = {{"disassembler", r.disassembler},
                 {"instructions", r.mix->total},
                 {"local_stores", r.mix->local_stores},
                 {"local_loads", r.mix->local_loads},
                 {"barriers", r.mix->barriers},
                 {"groups", r.mix->groups},
                 {"opcodes", r.mix->by_opcode}};
  }
  nlohmann::json checks = nlohmann::json::array();
  for (const Check& c : r.checks) checks.push_back({{"name", c.name}, {"status", to_string(c.status)}, {"detail", c.detail}});
  j["checks"] = std::move(checks);
  j["result"] = r.passed() ? "PASS" : "FAIL";
  j["line"] = result_line(r);
  return j;
}

}  // namespace kerncap::lint
