#include "extract/diagnose.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "names/closest.hpp"
#include "names/demangle.hpp"
#include "common/error.hpp"
#include "format/protocol.hpp"

namespace kerncap::extract {

namespace {

std::string no_such_rank(int64_t rank, const format::events::Log& log, const std::string& app_state) {
  std::string seen;
  size_t unknown = 0;
  for (const auto& s : log.starts) {
    if (s.rank < 0) {
      ++unknown;
      continue;
    }
    seen += fmt::format("{}{} ({})", seen.empty() ? "" : ", ", s.rank, s.rank_source);
  }
  std::string msg = fmt::format("no process of the application is rank {}; {}", rank, app_state);
  if (!seen.empty()) msg += fmt::format("\nranks of the processes that initialised CUDA: {}", seen);
  if (unknown)
    msg += fmt::format("\n{} process(es) could not tell their rank (no RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK, "
                       "PMI_RANK or SLURM_PROCID, and no free start-order slot)",
                       unknown);
  return msg;
}

// The distinct demangled names of the skipped launches with `reason`.
std::vector<std::string> skipped_names(const format::events::Log& log, format::events::SkipReason reason) {
  std::vector<std::string> out;
  for (const auto& s : log.skipped) {
    if (s.reason != format::events::name(reason)) continue;
    std::string n = names::demangle(s.mangled);
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string list_names(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 4; ++i) s += "\n  " + names[i];
  if (names.size() > 4) s += fmt::format("\n  ... and {} more", names.size() - 4);
  return s;
}

// No launch matched, but the library saw the target inside CUDA graphs that never ran it.
std::string only_in_graphs(const Target& t, const format::events::Log& log, const std::string& app_state) {
  using format::events::SkipReason;
  const auto unlaunched = skipped_names(log, SkipReason::UnlaunchedGraph);
  const auto nested = skipped_names(log, SkipReason::NestedGraph);
  std::string msg;
  if (!unlaunched.empty())
    msg = fmt::format("no launched kernel matches '{}': it was seen only as a node of a CUDA graph that was "
                      "instantiated but never launched, so it never ran ({}). Capture it from a run that launches "
                      "the graph (cuGraphLaunch / graph.replay()). The graph's matching kernels:{}",
                      t.kernel, app_state, list_names(unlaunched));
  if (!nested.empty()) {
    if (!msg.empty()) msg += "\n";
    msg += fmt::format("no launched kernel matches '{}': it was seen only inside a CUDA graph that was launched on a "
                       "stream being captured into another graph; such a launch does not run then (the driver either "
                       "records it as a child graph of the outer graph or refuses it), and kerncap cannot capture "
                       "kernels inside nested graphs ({}). Launch that graph on a stream that is not capturing, or "
                       "capture the kernel where it runs outside the outer graph. Kernels:{}",
                       t.kernel, app_state, list_names(nested));
  }
  return msg;
}

// No launch matched, but matching kernels sat in code images the application loaded.
std::string only_in_images(const Target& t, const format::events::Log& log, const std::string& app_state) {
  return fmt::format("no launched kernel matches '{}'; {}. The application loaded code that holds matching "
                     "kernels, but the host never launched them: they ran only from other kernels (CUDA dynamic "
                     "parallelism: kerncap sees host-side launches, so capture the kernel that launches them), or "
                     "this run did not reach them (other inputs or a later step may). Matching kernels in the loaded "
                     "code:{}",
                     t.kernel, app_state, list_names(log.unlaunched));
}

}  // namespace

std::string diagnose(const Target& t, const format::events::Log& log, const AppExit& app) {
  std::string app_state = fmt::format("the application {}", app.describe());
  // Killed: before the target launch, or after it while the capture was being written (the
  // library reported the match; no complete capture followed).
  if (!app.exited && app.code)
    app_state += log.matches.count(t.dispatch) && !log.captured
                      ? " after the target launch was reached, while its capture (BEFORE, the launch, AFTER) was "
                        "being written; nothing incomplete was kept"
                      : " before the target launch";
  if (!log.errors.empty()) {
    std::string msg = fmt::format("the capture failed inside the application: {}", log.errors.front());
    for (size_t i = 1; i < log.errors.size(); ++i) msg += "\n  also: " + log.errors[i];
    return msg + fmt::format("\n({})", app_state);
  }
  if (log.starts.empty()) {
    if (app.exited && app.code == 127) return "the application could not be started (see the message above)";
    return fmt::format("{} and never initialised CUDA with kerncap attached (it may not use the GPU, may have "
                       "failed to start, or CUDA_INJECTION64_PATH was overridden)",
                       app_state);
  }
  if (t.rank >= 0) {
    bool any = false;
    for (const auto& s : log.starts) any = any || s.selected;
    if (!any) return no_such_rank(t.rank, log, app_state);
  }
  std::string msg;
  const std::string in_graphs = log.matches.empty() ? only_in_graphs(t, log, app_state) : std::string();
  if (!in_graphs.empty()) {
    msg = in_graphs;
  } else if (log.matches.empty() && !log.unlaunched.empty()) {
    msg = only_in_images(t, log, app_state);
  } else if (log.seen.empty()) {
    msg = fmt::format("{} without launching any kernel", app_state);
  } else if (log.matches.empty()) {
    auto close = names::closest_names(t.kernel, log.seen, 8);
    msg = fmt::format("no launched kernel matches '{}'; {} ({} distinct kernels seen). Closest names:", t.kernel,
                      app_state, log.seen.size());
    for (const auto& n : close) msg += "\n  " + n;
  } else if (log.matches.count(t.dispatch)) {
    msg = fmt::format("the target launch of '{}' was reached but the capture did not complete: {}", t.kernel,
                      app_state);
  } else {
    // The library reports the first matches, powers of two and the last (at exit): the
    // highest index is how far the count got.
    msg = fmt::format("'{}' matched only {} launch(es) but --dispatch {} asks for launch #{} (counting from 0); {}",
                      t.kernel, *log.matches.rbegin() + 1, t.dispatch, t.dispatch, app_state);
  }
  if (!log.skipped.empty() && in_graphs.empty())
    msg += fmt::format("\n{} matching launch(es) were not counted (recorded into a CUDA graph being captured, or in "
                       "a graph kerncap could not follow: the library's messages above say which)",
                       log.skipped.size());
  if (t.device >= 0 && !log.ignored.empty())
    msg += fmt::format("\n--device {} counts only launches on CUDA device {} of the process (as it numbers its "
                       "devices, after CUDA_VISIBLE_DEVICES); {} kernel name(s) ran on other devices",
                       t.device, t.device, log.ignored.size());
  if (log.graph_launch)
    msg += "\nnote: the application launched CUDA graphs kerncap did not see instantiated; their kernels are not seen";
  return msg;
}

std::optional<std::string> protocol_mismatch(const format::events::Log& log, const std::filesystem::path& library) {
  for (const auto& s : log.starts) {
    if (s.protocol == format::kProtocolVersion) continue;
    std::string theirs = s.tool.empty() ? "an older kerncap, before versioned events" : "kerncap " + s.tool;
    return fmt::format(
        "libkerncap.so at {} speaks protocol {} ({}), this kerncap speaks {} (kerncap {}); the library and the "
        "command come from different builds, so their variables and events may mean different things. Use the "
        "library of this build (set {} to it, or reinstall both together) and run again",
        library.string(), s.protocol, theirs, format::kProtocolVersion, KERNCAP_VERSION,
        format::env_name(format::Var::Library));
  }
  return std::nullopt;
}

void check_protocol(const format::events::Log& log, const std::filesystem::path& library) {
  if (auto why = protocol_mismatch(log, library)) input_error(*why);
}

}  // namespace kerncap::extract
