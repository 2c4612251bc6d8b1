#include "cli/validate_served.hpp"
#include "format/out_layout.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "cli/validate_output.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "serve/client.hpp"
#include "serve/socket.hpp"

namespace kerncap::cli {
namespace fs = std::filesystem;
using std::chrono::milliseconds;

bool validate_served(const ReplayCommon& c, const format::Capture& cap, const ValidateShape& shape, ServerUse use,
                     const std::optional<std::string>& toml, int& exit_code) {
  if (use == ServerUse::Off) return false;
  fs::path key;
  try {
    key = serve::server_dir(c.dir);
  } catch (const Error&) {
    return false;  // a directory that is not there: this process says so, as without a server
  }
  const std::string name = serve::socket_name(key, ::geteuid());
  auto note = [&](pid_t pid, const std::string& why) {
    if (!c.quiet)
      std::fprintf(stderr, "kerncap: note: not evaluated by kerncap serve%s: %s; validating in this process\n",
                   pid ? fmt::format(" (pid {})", pid).c_str() : "", why.c_str());
    return false;
  };
  // Is one there, and how did it open the capture? (It answers between evaluations.)
  const serve::CallResult ping = serve::call(name, serve::Request{}, milliseconds(1000));
  if (ping.status == serve::CallResult::Status::NoServer) return false;
  if (ping.status == serve::CallResult::Status::Failed) return note(ping.server_pid, ping.why);
  ServerInfo info;
  try {
    info = ServerInfo::from_json(ping.response.server);
  } catch (const serve::ProtocolError& e) {
    return note(ping.server_pid, e.what());
  }
  // Its pid as this process sees it (SO_PEERCRED), not as it says (another pid namespace).
  const pid_t pid = ping.server_pid;
  if (const std::string why = why_not_served(shape, info, key.string()); !why.empty()) return note(pid, why);
  serve::Request r;
  r.op = serve::Op::Evaluate;
  if (!c.cubin.empty()) {
    std::error_code ec;
    // A missing or odd file is named by this process's own error, as without a server.
    if (!fs::is_regular_file(c.cubin, ec)) return false;
    r.cubin = fs::absolute(c.cubin).lexically_normal().string();
    r.image = c.cubin;  // how validate names it
  }
  r.options = shape.options;
  // No limit on the answer: an evaluation takes what it takes; a server that dies closes the socket.
  const serve::CallResult a = serve::call(name, r, milliseconds(-1));
  if (a.status != serve::CallResult::Status::Answered)
    return note(pid, a.why.empty() ? "it stopped before answering" : a.why);
  const serve::Response& resp = a.response;
  if (!resp.ok) {
    const auto kind = serve::error_kind(resp.error->kind);
    // The image's own faults (refused variant, wrong layout, bad options) are this
    // validation's answer; the server's (a fault, a changed capture) are not.
    if (kind == ErrorKind::Input || kind == ErrorKind::Usage) {
      std::fprintf(stderr, "kerncap: evaluated by kerncap serve (pid %d)\n", pid);
      fail(*kind, resp.error->message);
    }
    return note(pid, fmt::format("it answered {}: {}", resp.error->kind, resp.error->message));
  }
  ValidateOutput out;
  try {
    out = output_from_evaluation(resp.evaluation, info.device_line, info.placement);
  } catch (const nlohmann::json::exception& e) {
    return note(pid, fmt::format("its evaluation is incomplete: {}", e.what()));
  }
  const std::string own_compare = (cap.dir.parent_path() / format::out::kCompareSpec).string();
  out.verdict["spec"] = spec_source_here(out.verdict.value("spec", "default"), info, own_compare);
  std::fprintf(stderr, "kerncap: evaluated by kerncap serve (pid %d)\n", pid);
  out.served_by = pid;
  print_validate(out, cap, c.json, toml);
  exit_code = out.pass ? 0 : 1;
  return true;
}

}  // namespace kerncap::cli
