#include "cli/validate_output.hpp"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "cli/replay_options.hpp"
#include "common/hex.hpp"
#include "replay/evaluate.hpp"

namespace kerncap::cli {
using nlohmann::json;

json validate_document(const ValidateOutput& o, const std::string& pruned, const std::optional<std::string>& toml) {
  json j = o.verdict;
  j["kernel"] = o.kernel;
  j["image"] = o.image;
  j["device"] = o.device;
  j["relocated_regions"] = o.placement.runs_relocated;
  j["rewritten_words"] = o.rewritten_words;
  // Where the restore's time went (the comparison's: "compare_work").
  j["restore_work"] = o.restore_work;
  j["determinism_checked"] = o.determinism_checked;
  if (!pruned.empty()) j["pruned"] = pruned;
  if (o.fuzz) j["fuzz"] = *o.fuzz;
  if (o.speedup) j["speedup"] = *o.speedup;
  if (toml) j["kerncap_toml"] = *toml;
  if (o.served_by) j["served_by"] = {{"pid", o.served_by}};
  j["result"] = o.pass ? "PASS" : "FAIL";
  j["line"] = o.line;
  return j;
}

std::vector<std::string> validate_document_keys() {
  // An evaluation with every optional part present: each key validate --json can print.
  replay::Evaluation e;
  e.fuzz.emplace();
  e.speedup.emplace();
  e.verdict.invariants.emplace();
  e.speedup_note = "-";
  ValidateOutput o = output_from_evaluation(e.to_json(), "", placement_json({}));
  o.served_by = 1;
  const json doc = validate_document(o, "-", std::string("-"));
  std::vector<std::string> keys;
  for (auto it = doc.begin(); it != doc.end(); ++it) keys.push_back(it.key());
  return keys;
}

void print_validate(const ValidateOutput& o, const format::Capture& cap, bool as_json,
                    const std::optional<std::string>& toml) {
  if (as_json) {
    std::cout << validate_document(o, pruned_note(cap), toml).dump(2) << std::endl;
    return;
  }
  const json& v = o.verdict;
  std::cout << o.kernel << "\n  image: " << o.image << "\n  " << o.device_line << "\n  "
            << placement_line(o.placement, o.rewritten_words) << "\n";
  if (const std::string spec = v.value("spec", "default"); spec != "default") std::cout << "  compared with: " << spec << "\n";
  if (const std::string n = pruned_note(cap); !n.empty()) std::cout << "  " << n << "\n";
  const json nondet = v.value("nondeterministic_regions", json::array());
  for (const auto& x : v.at("regions")) {
    const bool listed = std::find(nondet.begin(), nondet.end(), x.at("id")) != nondet.end();
    if (x.at("pass").get<bool>() && !listed) continue;
    std::cout << fmt::format("  region {} ({} at {}, {}; launch wrote {}): {}\n", x.at("id").get<uint64_t>(),
                             x.at("kind").get<std::string>(), x.at("base").get<std::string>(),
                             human_bytes(x.at("size").get<uint64_t>()), human_bytes(x.at("written").get<uint64_t>()),
                             x.at("summary").get<std::string>());
  }
  if (v.contains("invariants")) {
    const json& inv = v["invariants"];
    for (const auto& x : inv.at("violations")) std::cout << "  invariant violated: " << x.at("message").get<std::string>() << "\n";
    for (const auto& n : inv.at("notes")) std::cout << "  note: " << n.get<std::string>() << "\n";
    std::cout << inv.at("line").get<std::string>() << " [from " << o.invariants_from << "]\n";
  }
  if (o.fuzz) std::cout << o.fuzz_line << "\n";
  if (o.speedup) std::cout << o.speedup_line << "\n";
  if (!o.speedup_note.empty()) std::cout << "  note: " << o.speedup_note << "\n";
  std::cout << o.line << "\n";
}

json placement_json(const replay::PlacementStats& p) {
  return {{"blocks", p.blocks}, {"blocks_at_hint", p.blocks_at_hint}, {"runs_fallback", p.runs_fallback},
          {"runs_relocated", p.runs_relocated}, {"mapped_bytes", p.mapped_bytes}, {"host_bytes", p.host_bytes},
          {"host_as_device_bytes", p.host_as_device_bytes}};
}

ValidateOutput output_from_evaluation(const json& e, const std::string& device_line, const json& placement) {
  ValidateOutput o;
  // The evaluation is the verdict's object plus the loop's own keys.
  o.verdict = e;
  for (const char* k : {"kernel", "image", "device", "relocated_regions", "rewritten_words", "determinism_checked",
                        "fuzz", "speedup", "result", "line", "timing", "image_hash", "captured_image", "loaded", "memory",
                        "seconds", "restore_work", "session_strong"})
    o.verdict.erase(k);
  o.verdict["line"] = e.at("line");  // replaced by the final line, as in validate
  o.verdict["result"] = e.at("result");
  o.kernel = e.at("kernel").get<std::string>();
  o.image = e.at("image").get<std::string>();
  o.device = e.at("device").get<int>();
  o.device_line = device_line;
  o.placement.blocks = placement.at("blocks").get<uint32_t>();
  o.placement.blocks_at_hint = placement.at("blocks_at_hint").get<uint32_t>();
  o.placement.runs_fallback = placement.at("runs_fallback").get<uint32_t>();
  o.placement.runs_relocated = placement.at("runs_relocated").get<uint32_t>();
  o.placement.mapped_bytes = placement.at("mapped_bytes").get<uint64_t>();
  // Added later to the placement: absent from a description that has no host memory to say.
  o.placement.host_bytes = placement.value("host_bytes", uint64_t{0});
  o.placement.host_as_device_bytes = placement.value("host_as_device_bytes", uint64_t{0});
  o.rewritten_words = e.at("rewritten_words").get<uint64_t>();
  o.restore_work = e.at("restore_work");
  o.determinism_checked = e.at("determinism_checked").get<bool>();
  if (e.contains("fuzz")) {
    o.fuzz = e["fuzz"];
    o.fuzz_line = e["fuzz"].at("line").get<std::string>();
  }
  const json& policy = e.at("policy");
  o.invariants_from = policy.at("invariants_from").get<std::string>();
  if (e.contains("speedup")) {
    o.speedup = e["speedup"];
    o.speedup->erase("line");
    const std::string from = policy.at("min_speedup_from").get<std::string>();
    o.speedup_line = e["speedup"].at("line").get<std::string>() + (from.empty() ? "" : " [from " + from + "]");
  }
  o.speedup_note = e.value("speedup_note", "");
  o.line = e.at("line").get<std::string>();
  o.pass = e.at("result") == "PASS";
  return o;
}

}  // namespace kerncap::cli
