// `kerncap replay`: run the captured launch alone, at its original addresses, and time it.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "format/capture_dir.hpp"
#include "format/window.hpp"
#include "cli/replay_options.hpp"
#include "common/error.hpp"
#include "replay/peer.hpp"
#include "replay/session.hpp"
#include "replay/timing.hpp"
#include "replay/timing_flags.hpp"

namespace kerncap::cli {
namespace {

void run_replay(const ReplayCommon& c, const replay::TimingOptions& t, int& exit_code) {
  replay::check(t);
  if (format::is_window_capture(format::resolve_capture_dir(c.dir)))
    usage_error(c.dir + " holds a window of launches: replay it with `kerncap window replay " + c.dir + "`");
  replay::Session s(with_fresh_variant(c, "replaying").options());
  auto rs = s.restore();
  const replay::Timing timing = replay::time_launches(s, t);
  const auto& m = s.capture().manifest;
  const auto& st = s.address_space().stats();
  if (c.json) {
    nlohmann::json j = timing.to_json();
    j.update({{"kernel", m.demangled_name},
              {"image", s.image_description()},
              {"device", s.device().ordinal},
              {"restored_bytes", rs.bytes},
              {"blocks", st.blocks},
              {"blocks_at_hint", st.blocks_at_hint},
              {"relocated_regions", st.runs_relocated},
              {"rewritten_words", rs.rewritten_words}});
    j.update(replay::in_app_json(timing, replay::in_app_of(m)));
    std::cout << j.dump(2) << std::endl;
  } else {
    const auto& x = timing.stats;
    std::cout << fmt::format("{}\n  image: {}\n  {}\n  {}\n  {}\n  {} iterations after {} warm-up: median {:.4f} ms, "
                             "min {:.4f} ms, max {:.4f} ms, stddev {:.4f} ms\n",
                             m.demangled_name, s.image_description(), s.device().line(m),
                             placement_line(st, rs.rewritten_words),
                             timing.describe(), t.iterations, t.warmup, x.median, x.min, x.max, x.stddev);
    if (const std::string note = replay::peer_note(m, s.device().ordinal); !note.empty())
      std::cout << "  note: " << note << "\n";
    if (const std::string line = replay::in_app_line(timing, replay::in_app_of(m)); !line.empty())
      std::cout << "  " << line << "\n";
  }
  exit_code = 0;
}

}  // namespace

void add_replay(CLI::App& app, int& exit_code) {
  auto c = std::make_shared<ReplayCommon>();
  auto a = std::make_shared<replay::TimingFlags>();
  auto* cmd = app.add_subcommand("replay", "Replay a captured launch alone and time it");
  cmd->footer("Restores every captured byte at its original address (32 MiB-aligned reservations; ranges that\n"
              "cannot come back are moved and pointers into them rewritten), loads the image, and launches\n"
              "with the captured parameters and attributes; prints median/min/max/stddev of the kernel time.\n" +
              std::string(replay::kTimingHelp));
  add_replay_common(cmd, c);
  replay::add_timing_flags(cmd, *a);
  cmd->callback([c, a, &exit_code] { run_replay(*c, a->options(), exit_code); });
}

}  // namespace kerncap::cli
