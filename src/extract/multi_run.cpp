#include "extract/multi_run.hpp"

#include <cstdio>
#include <set>

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/private_files.hpp"
#include "extract/diagnose.hpp"
#include "extract/environment.hpp"
#include "extract/triton_step.hpp"
#include "format/chunk_store.hpp"
#include "format/events.hpp"
#include "format/out_layout.hpp"
#include "format/kerncap_toml.hpp"

namespace kerncap::extract {
namespace {

void progress(const Request& r, const std::string& line) {
  if (!r.quiet) std::fprintf(stderr, "kerncap: %s\n", line.c_str());
}

// The Triton shim records into OUT/triton for the whole run; a Triton target's generator
// reads its own directory's triton/.
void share_triton_records(const fs::path& out, const fs::path& dir) {
  const fs::path from = format::out::triton_dir(out);
  std::error_code ec;
  if (!fs::is_directory(from, ec)) return;
  fs::copy(from, format::out::triton_dir(dir), fs::copy_options::recursive | fs::copy_options::skip_symlinks, ec);
}

// The rest of one captured target: what run_capture does after the application.
void finish_target(const Request& r, const HostEnv& host, const fs::path& out, TargetResult& t) {
  t.capture = format::open_capture(format::out::capture_dir(t.dir));
  t.outcome.captured = true;
  t.outcome.kernel = t.capture.manifest.demangled_name;
  t.outcome.launch_index = t.capture.manifest.launch_index;
  share_triton_records(out, t.dir);
  write_triton_reproducer(t.dir, true, host);
  t.reproducer = make_reproducer(t.dir, r.source, r.kerncap);
  format::write_default_kerncap_toml(t.dir);
}

}  // namespace

MultiResult run_captures(const Request& r) {
  check_request(r);
  check_targets(r.targets);
  const HostEnv host = read_host_env();
  refuse_other_tool(host, "capture");
  check_source_options(r.source);
  MultiResult res;
  res.out = fs::absolute(r.output);
  prepare_output(res.out, r.force);
  format::Config c = library_config(r, res.out);
  c.kernel.clear();
  std::set<fs::path> groups;
  for (size_t i = 0; i < r.targets.size(); ++i) {
    TargetResult t;
    t.outcome.request = r.targets[i];
    t.outcome.dir = r.targets[i].dir.empty() ? target_dir_name(i, r.targets[i]) : r.targets[i].dir;
    t.dir = res.out / t.outcome.dir;
    // A grouped target's parent (one kernel's regime set) is prepared as an OUT of its own:
    // never a link, its stale index replaced under --force.
    if (const fs::path group = fs::path(t.outcome.dir).parent_path(); !group.empty() && groups.insert(group).second)
      prepare_output(res.out / group, r.force);
    prepare_output(t.dir, r.force);
    c.targets.push_back({r.targets[i].kernel, r.targets[i].match, r.targets[i].dispatch, t.dir.string()});
    res.targets.push_back(std::move(t));
  }
  const fs::path lib = find_injection_library(host.library);
  auto env = app_environment(c, lib);
  add_triton_shim(env, res.out, host);
  progress(r, fmt::format("running the application to capture {} targets into {}", r.targets.size(), res.out.string()));
  for (const auto& t : res.targets)
    progress(r, fmt::format("  {} '{}' ({}, dispatch {})", t.outcome.dir, t.outcome.request.kernel,
                            format::to_string(t.outcome.request.match), t.outcome.request.dispatch));
  res.app = r.cmd.empty() ? run_application(r.argv, false, env) : run_application({r.cmd}, true, env);
  const fs::path state = format::out::state_dir(res.out);
  const auto whole = format::events::read_dir(state);
  check_protocol(whole, lib);
  res.stopped = whole.stopping;
  if (auto store = chunk_store(r)) format::set_default_store(*store);
  for (size_t i = 0; i < res.targets.size(); ++i) {
    TargetResult& t = res.targets[i];
    const TargetRequest& q = t.outcome.request;
    if (!fs::exists(format::out::capture_dir(t.dir) / format::kManifestName)) {
      t.outcome.why = diagnose({q.kernel, q.dispatch, r.rank, r.device}, format::events::read_dir(state, int(i)), res.app);
      progress(r, fmt::format("target {}/{} {} '{}': NOT captured: {}", i + 1, res.targets.size(), t.outcome.dir,
                              q.kernel, t.outcome.why.substr(0, t.outcome.why.find('\n'))));
      continue;
    }
    try {
      finish_target(r, host, res.out, t);
    } catch (const Error& e) {
      // One target's damaged capture or failed reproducer does not take the others down.
      t.outcome.captured = false;
      t.outcome.why = e.what();
      progress(r, fmt::format("target {}/{} {} '{}': NOT captured: {}", i + 1, res.targets.size(), t.outcome.dir,
                              q.kernel, e.what()));
      continue;
    }
    progress(r, fmt::format("target {}/{} {} '{}': captured {} (launch {} of the process)", i + 1,
                            res.targets.size(), t.outcome.dir, q.kernel, t.outcome.kernel, t.outcome.launch_index));
  }
  std::vector<TargetOutcome> outcomes;
  for (const auto& t : res.targets) outcomes.push_back(t.outcome);
  const std::string app = res.stopped ? "stopped after the last capture" : res.app.describe();
  const std::string index =
      targets_index(outcomes, app).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  files::replace_file(res.out / std::string(format::out::kTargetsIndex), index);
  return res;
}

void fail_missing(const MultiResult& res) {
  std::string msg = fmt::format("{} of {} targets were not captured ({} lists every target):", res.missing(),
                                res.targets.size(), (res.out / std::string(format::out::kTargetsIndex)).string());
  for (size_t i = 0; i < res.targets.size(); ++i) {
    const TargetOutcome& o = res.targets[i].outcome;
    if (o.captured) continue;
    std::string why = o.why;
    for (size_t p = why.find('\n'); p != std::string::npos; p = why.find('\n', p + 5)) why.replace(p, 1, "\n    ");
    msg += fmt::format("\n  {} '{}' (dispatch {}): {}", o.dir, o.request.kernel, o.request.dispatch, why);
  }
  input_error(msg);
}

}  // namespace kerncap::extract
