// `kerncap info`: what a capture holds.
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "common/hex.hpp"
#include "format/capture_dir.hpp"

namespace kerncap::cli {
namespace {

// "chunks     ...": stored vs compressed bytes and what deduplication saved (format 3).
std::string chunk_line(const format::Capture& c) {
  std::set<std::pair<uint64_t, uint64_t>> seen;
  uint64_t refs = 0, bytes = 0, unique = 0, unique_bytes = 0, files = 0, raw = 0;
  for (const auto& r : c.manifest.regions)
    for (const auto& ch : r.chunks) {
      ++refs;
      bytes += ch.size;
      if (!seen.insert({ch.hash_hi, ch.hash_lo}).second) continue;
      ++unique;
      unique_bytes += ch.size;
      files += ch.stored;
      raw += ch.raw();
    }
  if (!refs) return "";
  std::string s = fmt::format(
      "chunks     {} stored in {} chunks; {} distinct ({} kept once: {} saved by deduplication), {} on disk "
      "compressed (ratio {:.2f}; {} incompressible kept raw)\n",
      human_bytes(bytes), refs, unique, human_bytes(unique_bytes), human_bytes(bytes - unique_bytes),
      human_bytes(files), files ? static_cast<double>(unique_bytes) / static_cast<double>(files) : 1.0, raw);
  if (c.manifest.external_store)
    s += fmt::format("           in a shared chunk store ({}: {})\n",
                     c.store ? "given" : "not given, --store DIR reads it", c.store ? c.store->string() : c.manifest.store_hint);
  return s;
}

void run_info(const std::string& dir, bool json, bool verify, int& exit_code) {
  format::Capture c = format::open_capture(dir);  // checks everything but the BEFORE files' hashes
  if (verify) format::verify_blobs(c);
  const auto& m = c.manifest;
  if (json) {
    auto j = format::to_json(m);
    j["capture_dir"] = c.dir.string();
    if (verify) j["verified"] = true;
    std::cout << j.dump(2) << std::endl;
    exit_code = 0;
    return;
  }
  std::cout << fmt::format("capture    {} (format {}, kerncap {})\n", c.dir.string(), m.format_version, m.tool_version);
  std::cout << fmt::format("kernel     {}\n           {}\n", m.demangled_name, m.mangled_name);
  std::cout << fmt::format("from       pid {}: {}\n", m.pid, m.command);
  std::cout << fmt::format("device     {} (sm_{}{}), driver {}\n", m.device_name, m.cc_major, m.cc_minor, m.driver_version);
  std::cout << fmt::format("launch     #{} (dispatch {}) via {}: grid {}x{}x{} block {}x{}x{} dynamic shared {} B{}{}\n",
                           m.launch_index, m.dispatch, m.launch_api, m.grid[0], m.grid[1], m.grid[2], m.block[0],
                           m.block[1], m.block[2], m.shared_mem_bytes, m.cooperative ? " cooperative" : "",
                           m.cluster[0] ? fmt::format(" cluster {}x{}x{}", m.cluster[0], m.cluster[1], m.cluster[2]) : "");
  for (const auto& a : m.launch_attrs) std::cout << fmt::format("           attribute {} ({})\n", a.name, a.id);
  if (m.in_app_median_ns)
    std::cout << fmt::format("in-app     median {:.4f} ms ({}the application's launches with this grid, block and "
                             "shared memory{})\n",
                             *m.in_app_median_ns / 1e6,
                             m.in_app_samples ? fmt::format("over {} of ", m.in_app_samples) : std::string(),
                             m.in_app_launches == 1 ? "; the only one was its first launch, cold" : "");
  std::cout << fmt::format("params     {} bytes from {}, {} slots:", m.params_size, m.params_source, m.params.size());
  for (const auto& s : m.params) std::cout << fmt::format(" {}@{}", s.size, s.offset);
  std::cout << fmt::format("\nimage      {} ({}, hash checked)\n", m.image_file, m.image_kind);
  uint64_t stored = 0, pruned = 0;
  for (const auto& r : m.regions) {
    stored += format::stored_bytes(r);
    pruned += format::pruned_bytes(r);
  }
  std::cout << fmt::format("memory     {} regions, BEFORE {} ({} stored, the rest zeros{}), AFTER {} in {} runs\n",
                           m.regions.size(), human_bytes(m.before_bytes), human_bytes(stored),
                           pruned ? fmt::format(" or pruned: {} the launch never touches", human_bytes(pruned)) : "",
                           human_bytes(m.after_bytes), m.after.size());
  if (const std::string s = chunk_line(c); !s.empty()) std::cout << s;
  if (verify) std::cout << "           every BEFORE file matches the hash recorded at capture\n";
  for (const auto& r : m.regions) {
    uint64_t written = 0;
    for (const auto& a : m.after)
      if (a.region == r.id) written += a.size;
    std::cout << fmt::format("  {:>4} {:<16} {:>18} {:>10}  written {:>10}{}{} {}\n", r.id, format::to_string(r.kind),
                             hex_addr(r.base), human_bytes(r.size), human_bytes(written),
                             r.stored ? fmt::format("  stored {:>10}", human_bytes(format::stored_bytes(r))) : "",
                             r.pruned.empty() ? "" : fmt::format("  pruned {:>10}", human_bytes(format::pruned_bytes(r))),
                             r.global);
  }
  const format::Textures& t = m.textures;
  if (!t.empty())
    std::cout << fmt::format("textures   {} handles in the parameters, {} texture/surface objects, {} CUDA arrays\n",
                             t.handles.size(), t.objects.size(), t.arrays.size());
  for (const auto& o : t.objects) {
    std::string res = format::to_string(o.resource);
    if (o.resource == format::ResourceType::Array || o.resource == format::ResourceType::MipmappedArray) {
      const format::ArrayRecord* a = t.find_array(o.array);
      if (a)
        res += fmt::format(" {}x{}x{} {}x{} flags {:#x}{} (region {})", a->width, a->height, a->depth,
                           format::array_format_name(a->format), a->channels, a->flags,
                           a->levels ? fmt::format(", {} levels", a->levels) : "", a->region);
    } else {
      res += fmt::format(" at {}, {}", hex_addr(o.address), human_bytes(o.memory_bytes()));
    }
    std::string at;
    for (const auto& h : t.handles)
      if (h.object == o.id) at += fmt::format("{}{}", at.empty() ? "" : ", ", h.offset);
    std::cout << fmt::format("  {:>4} {:<8} {:#x} at parameter offset {}: {}\n", o.id, o.surface ? "surface" : "texture",
                             o.handle, at.empty() ? "none" : at, res);
  }
  exit_code = 0;
}

}  // namespace

void add_info(CLI::App& app, int& exit_code) {
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto verify = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("info", "Show what a capture holds");
  cmd->add_option("dir", *dir, "Reproducer directory (OUT) or its capture/ folder")->required();
  cmd->add_flag("--json", *json, "Print the manifest as JSON");
  cmd->add_flag("--verify", *verify,
                "Also check every BEFORE file against the hash recorded at capture (reads all of them)");
  add_store_option(cmd);
  cmd->callback([dir, json, verify, &exit_code] { run_info(*dir, *json, *verify, exit_code); });
}

}  // namespace kerncap::cli
