#include "cli/replay_options.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "reproducer/variant.hpp"

namespace kerncap::cli {

replay::Options ReplayCommon::options() const {
  replay::Options o;
  o.capture = dir;
  if (!cubin.empty()) o.cubin = cubin;
  o.allow_relocate = !no_relocate;
  o.verify_hashes = verify;
  if (collide >= 0) o.collide_region = static_cast<uint32_t>(collide);
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
  cmd->add_flag("--verify", c->verify,
                "Check every BEFORE file against the hashes recorded at capture (damaged captures; the code image "
                "is always checked)");
  cmd->add_flag("--json", c->json, "Print the result as JSON on stdout");
  cmd->add_flag("-q,--quiet", c->quiet, "Only the result");
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
  return fmt::format("placement: {} of {} 32 MiB blocks at their addresses, {} ranges re-reserved alone, {} relocated; "
                     "{} mapped; {} pointer words rewritten",
                     st.blocks_at_hint, st.blocks, st.runs_fallback, st.runs_relocated, human_bytes(st.mapped_bytes),
                     rewritten);
}

}  // namespace kerncap::cli
