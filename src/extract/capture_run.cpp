#include "extract/capture_run.hpp"

#include <cstdio>
#include <regex>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "extract/diagnose.hpp"
#include "extract/environment.hpp"
#include "extract/triton_step.hpp"
#include "format/kerncap_toml.hpp"
#include "storage/capture_writer.hpp"
#include "format/chunk_store.hpp"
#include "format/events.hpp"
#include "format/out_layout.hpp"

namespace kerncap::extract {

void prepare_output(const fs::path& out, bool force) {
  // OUT must be the directory itself: through a symlink, --force would delete and the
  // capture would write wherever the link points (another user's directory, a capture
  // that came with a bug report).
  if (files::is_symlink(out)) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(files::itself(out), ec);
    usage_error(fmt::format("output {} is a symbolic link (to {}); kerncap writes only into a real directory: "
                            "pass the directory itself (-o \"$(realpath {})\")",
                            out.string(), ec ? "?" : target.string(), out.string()));
  }
  if (fs::exists(out) && !fs::is_directory(out)) usage_error(fmt::format("{} exists and is not a directory", out.string()));
  if (fs::exists(out) && !fs::is_empty(out)) {
    if (!force)
      usage_error(fmt::format("output directory {} already exists; pass --force to replace the capture in it "
                              "(files kerncap did not write are kept)",
                              out.string()));
    // Entries are removed by name inside OUT and never followed: a symlink named capture/
    // goes, its target stays.
    for (const auto& e : fs::directory_iterator(out))
      if (format::out::force_replaced(e.path().filename().string()))
        files::remove_inside(out, e.path().filename().string());
  }
  files::create_private_dirs(format::out::state_dir(out));
}

void check_request(const Request& r) {
  if (r.cmd.empty() == r.argv.empty())
    usage_error("give the application either as --cmd \"./app args\" or after -- (but not both)");
  std::vector<std::string> regexes;
  if (r.regex && r.targets.empty()) regexes.push_back(r.kernel);
  for (const auto& t : r.targets)
    if (t.match == format::MatchKind::Regex) regexes.push_back(t.kernel);
  for (const auto& pattern : regexes) {
    try {
      std::regex re(pattern);
    } catch (const std::regex_error& e) {
      usage_error(fmt::format("--regex '{}' is not a valid regular expression: {}", pattern, e.what()));
    }
  }
}

namespace {

std::string where_text(const Request& r) {
  std::string s;
  if (r.rank >= 0) s += fmt::format(", rank {}", r.rank);
  if (r.device >= 0) s += fmt::format(", device {}", r.device);
  return s;
}

}  // namespace

// The shared chunk store, absolute (the application may run elsewhere): --store, else
// KERNCAP_STORE from the user's environment.
std::optional<fs::path> chunk_store(const Request& r) {
  std::optional<fs::path> s = r.store.empty() ? format::default_store() : std::optional<fs::path>(r.store);
  if (s) s = fs::absolute(*s);
  return s;
}

format::Config library_config(const Request& r, const fs::path& out) {
  format::Config c;
  c.mode = format::Mode::Capture;
  c.output = out.string();
  c.kernel = r.kernel;
  c.regex = r.regex;
  c.dispatch = r.dispatch;
  c.keep_running = r.keep_running;
  c.closure_all = r.closure_all;
  if (auto store = chunk_store(r)) c.store = store->string();
  c.rank = r.rank;
  c.device = r.device;
  c.verbose = r.quiet ? 0 : r.verbose;
  return c;
}

CaptureStart start_capture(const Request& r, const std::function<void(format::Config&)>& configure,
                           const std::string& what, bool triton_shim) {
  check_request(r);
  CaptureStart st;
  st.host = read_host_env();
  refuse_other_tool(st.host, "capture");
  st.out = fs::absolute(r.output);
  prepare_output(st.out, r.force);
  const fs::path lib = find_injection_library(st.host.library);
  format::Config config = library_config(r, st.out);
  if (configure) configure(config);
  auto env = app_environment(config, lib);
  if (triton_shim) add_triton_shim(env, st.out, st.host);
  if (!r.quiet) std::fprintf(stderr, "kerncap: running the application to capture %s\n", what.c_str());
  st.app = r.cmd.empty() ? run_application(r.argv, false, env) : run_application({r.cmd}, true, env);
  st.log = format::events::read_dir(format::out::state_dir(st.out));
  check_protocol(st.log, lib);
  if (!fs::exists(format::out::capture_dir(st.out) / format::kManifestName)) {
    const std::string why = diagnose({r.kernel, r.dispatch, r.rank, r.device}, st.log, st.app);
    // A capture cut short (the application crashed or was killed while writing it) leaves
    // its partial directory, possibly gigabytes: it goes, one line in OUT says why.
    format::abandon_partials(st.out, why);
    fail(ErrorKind::Input, why);
  }
  if (auto store = chunk_store(r)) format::set_default_store(*store);  // for the steps after this one too
  return st;
}

Result run_capture(const Request& r) {
  check_source_options(r.source);  // before the application runs
  Result res;
  // One target matched exactly (`--top 1 --from`): said through KERNCAP_TARGETS, which alone
  // carries the match kind; the layout is a one-target OUT all the same.
  const fs::path out = fs::absolute(r.output);
  CaptureStart st = start_capture(
      r,
      [&](format::Config& config) {
        for (const auto& t : r.targets) config.targets.push_back({t.kernel, t.match, t.dispatch, out.string()});
      },
      fmt::format("'{}' (dispatch {}{})", r.kernel, r.dispatch, where_text(r)), true);
  res.out = st.out;
  res.app = st.app;
  res.capture = format::open_capture(format::out::capture_dir(res.out));
  res.stopped = st.log.stopping;
  for (const auto& s : st.log.starts)
    if (r.rank >= 0 && s.selected && s.rank == r.rank) {
      res.rank = s.rank;
      res.rank_source = s.rank_source;
    }
  write_triton_reproducer(res.out, r.quiet || r.terse, st.host);
  res.reproducer = make_reproducer(res.out, r.source, r.kerncap);
  format::write_default_kerncap_toml(res.out);  // per-kernel rules; an existing file is the user's
  return res;
}

}  // namespace kerncap::extract
