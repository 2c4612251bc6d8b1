// `kerncap replay`: run the captured launch alone, at its original addresses, and time it.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/replay_options.hpp"
#include "common/error.hpp"
#include "replay/session.hpp"

namespace kerncap::cli {
namespace {

struct ReplayArgs {
  int iterations = 20;
  int warmup = 3;
  bool restore_each = false;
};

void run_replay(const ReplayCommon& c, const ReplayArgs& a, int& exit_code) {
  if (a.iterations < 1) usage_error("--iterations must be at least 1");
  if (a.warmup < 0) usage_error("--warmup must be >= 0");
  replay::Session s(with_fresh_variant(c, "replaying").options());
  auto rs = s.restore();
  for (int i = 0; i < a.warmup; ++i) s.launch();
  std::vector<float> ms;
  for (int i = 0; i < a.iterations; ++i) {
    if (a.restore_each) s.restore();
    ms.push_back(s.launch());
  }
  std::vector<float> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  float median = sorted[sorted.size() / 2];
  if (sorted.size() % 2 == 0) median = (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  const auto& m = s.capture().manifest;
  const auto& st = s.address_space().stats();
  if (c.json) {
    nlohmann::json j = {{"kernel", m.demangled_name},
                        {"image", s.image_description()},
                        {"iterations", a.iterations},
                        {"warmup", a.warmup},
                        {"median_ms", median},
                        {"min_ms", sorted.front()},
                        {"max_ms", sorted.back()},
                        {"times_ms", ms},
                        {"restored_bytes", rs.bytes},
                        {"blocks", st.blocks},
                        {"blocks_at_hint", st.blocks_at_hint},
                        {"relocated_regions", st.runs_relocated},
                        {"rewritten_words", rs.rewritten_words}};
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << fmt::format("{}\n  image: {}\n  {}\n  {} iterations after {} warm-up: median {:.4f} ms, min {:.4f} ms, "
                             "max {:.4f} ms\n",
                             m.demangled_name, s.image_description(), placement_line(s, rs.rewritten_words),
                             a.iterations, a.warmup, median, sorted.front(), sorted.back());
  }
  exit_code = 0;
}

}  // namespace

void add_replay(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<ReplayCommon>();
  auto a = std::make_shared<ReplayArgs>();
  auto* cmd = app.add_subcommand("replay", "Replay a captured launch alone and time it");
  cmd->footer("Restores every captured byte at its original address (32 MiB-aligned reservations; ranges that\n"
              "cannot come back are moved and pointers into them rewritten), loads the image, and launches\n"
              "with the captured parameters and attributes. Times with CUDA events: median/min/max.");
  add_replay_common(cmd, c);
  cmd->add_option("-n,--iterations", a->iterations, "Timed launches")->default_val(20);
  cmd->add_option("--warmup", a->warmup, "Untimed launches first")->default_val(3);
  cmd->add_flag("--restore-each", a->restore_each, "Restore memory before every timed launch (in-place kernels)");
  cmd->callback([c, a, &exit_code] { run_replay(*c, *a, exit_code); });
}

}  // namespace kerncap::cli
