#include "cli/replay_options.hpp"

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"
#include "reproducer/variant.hpp"

namespace kerncap::cli {

replay::Options ReplayCommon::options() const {
  replay::Options o;
  o.capture = dir;
  if (!cubin.empty()) o.cubin = cubin;
  o.allow_relocate = !no_relocate;
  o.verify_hashes = verify;
  if (collide >= 0) o.collide_region = static_cast<uint32_t>(collide);
  if (!grid.empty()) o.grid = parse_dims(grid, "--grid");
  if (!block.empty()) o.block = parse_dims(block, "--block");
  if (device >= 0) o.device = device;
  if ((o.grid || o.block) && !quiet && !json)
    std::fprintf(stderr, "kerncap: note: launching with%s%s%s%s instead of the captured geometry (`kerncap info` shows it)\n",
                 o.grid ? " grid " : "", o.grid ? grid.c_str() : "", o.block ? " block " : "", o.block ? block.c_str() : "");
  o.progress = !quiet && !json;
  if (quiet || json) log::set_level(log::Level::Quiet);
  return o;
}

void add_replay_common(CLI::App* cmd, const std::shared_ptr<ReplayCommon>& c) {
  cmd->add_option("dir", c->dir, "Reproducer directory (OUT) or its capture/ folder")->required();
  cmd->add_option("--cubin", c->cubin, "Load this code image (a recompiled variant) instead of the captured one");
  cmd->add_flag("--baseline", c->baseline,
                "Use the captured image even when OUT/optimized.cubin (or candidate.cubin) is newer than its sources");
  cmd->add_flag("--no-relocate", c->no_relocate,
                "Fail instead of moving a captured range that cannot come back at its address");
  cmd->add_option("--collide", c->collide, "Testing: occupy region N's addresses first to force a relocation")
      ->group("");
  cmd->add_option("--grid", c->grid,
                  "Launch with this grid (X[,Y[,Z]]) instead of the captured one: a variant tuned for another "
                  "geometry, or a check that a smaller launch fails validation");
  cmd->add_option("--block", c->block, "Launch with this block (X[,Y[,Z]], at most 1024 threads) instead of the captured one");
  cmd->add_option("--device", c->device,
                  "Replay on this CUDA device (default: the first of the captured model and compute capability, "
                  "else the captured ordinal); another architecture is refused")
      ->check(CLI::Range(0, 1023));
  cmd->add_flag("--verify", c->verify,
                "Check every BEFORE file against the hashes recorded at capture (damaged captures; the code image "
                "is always checked)");
  cmd->add_flag("--json", c->json, "Print the result as JSON on stdout");
  cmd->add_flag("-q,--quiet", c->quiet, "Only the result");
  add_store_option(cmd);
}

std::string pruned_note(const std::string& dir) { return pruned_note(format::open_capture(dir)); }

std::string pruned_note(const format::Capture& cap) {
  uint64_t pruned = 0, regions = 0;
  for (const auto& r : cap.manifest.regions) {
    pruned += format::pruned_bytes(r);
    regions += !r.pruned.empty();
  }
  if (!pruned) return "";
  return fmt::format("pruned: {} in {} regions that the footprint shows untouched were dropped (kerncap prune) and "
                     "replayed as 0x{:02X}: a read of them fails validation",
                     human_bytes(pruned), regions, format::kOmittedFill);
}

void add_store_option(CLI::App* cmd) {
  cmd->add_option_function<std::string>(
         "--store", [](const std::string& dir) { format::set_default_store(std::filesystem::absolute(dir)); },
         "The shared chunk store of a capture extracted with --store (default: KERNCAP_STORE)")
      ->type_name("DIR");
}

std::array<uint32_t, 3> parse_dims(const std::string& text, const char* what) {
  std::array<uint32_t, 3> d{1, 1, 1};
  size_t i = 0, pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (i == 3 || part.empty() || part.size() > 10 || part.find_first_not_of("0123456789") != std::string::npos)
      usage_error(fmt::format("{} {}: expected X[,Y[,Z]] with positive integers", what, text));
    const uint64_t v = std::stoull(part);
    if (v == 0) usage_error(fmt::format("{} {}: every dimension must be at least 1", what, text));
    const bool is_block = std::string(what) == "--block";
    const uint64_t limit = is_block ? 1024 : (i == 0 ? 0x7fffffffULL : 65535);
    if (v > limit) usage_error(fmt::format("{} {}: dimension {} is {}, above the CUDA limit {}", what, text, i, v, limit));
    d[i++] = static_cast<uint32_t>(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (std::string(what) == "--block" && uint64_t{d[0]} * d[1] * d[2] > 1024)
    usage_error(fmt::format("{} {}: {} threads in a block, above the CUDA limit 1024", what, text,
                            uint64_t{d[0]} * d[1] * d[2]));
  return d;
}

ReplayCommon with_fresh_variant(const ReplayCommon& c, const char* verb) {
  ReplayCommon r = c;
  if (!c.cubin.empty() && c.baseline) usage_error("--baseline and --cubin exclude each other");
  if (!c.cubin.empty() || c.baseline) return r;
  const reproducer::VariantChoice v = reproducer::fresh_variant(c.dir);
  if (v.cubin) r.cubin = v.cubin->string();
  if (!v.note.empty() && !c.quiet)
    std::fprintf(stderr, "kerncap: %s%s\n", v.cubin ? (std::string(verb) + " ").c_str() : "note: ", v.note.c_str());
  return r;
}

std::string placement_line(const replay::PlacementStats& st, uint64_t rewritten) {
  std::string host;
  if (st.host_bytes) host += fmt::format(" ({} in pinned host memory, as the application had it)", human_bytes(st.host_bytes));
  if (st.host_as_device_bytes)
    host += fmt::format(" ({} of the application's host memory as device memory)", human_bytes(st.host_as_device_bytes));
  return fmt::format("placement: {} of {} 32 MiB blocks at their addresses, {} ranges re-reserved alone, {} relocated; "
                     "{} mapped{}; {} pointer words rewritten",
                     st.blocks_at_hint, st.blocks, st.runs_fallback, st.runs_relocated, human_bytes(st.mapped_bytes),
                     host, rewritten);
}

}  // namespace kerncap::cli
