// `kerncap serve DIR`: keeps the capture open in this process — the session and evaluation
// loop that kc_open/kc_evaluate give Python (replay/eval_session.hpp) — and answers
// `kerncap validate DIR` over a Unix socket (src/serve/), so that each validation of the edit
// loop costs an evaluation, not a process that starts the driver and restores every byte.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "format/out_layout.hpp"
#include "cli/document_versions.hpp"
#include "cli/replay_options.hpp"
#include "cli/serve_route.hpp"
#include "cli/strong.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/footprint.hpp"
#include "replay/eval_session.hpp"
#include "cli/validate_output.hpp"
#include "serve/client.hpp"
#include "serve/file_stamps.hpp"
#include "serve/server.hpp"
#include "format/window.hpp"

namespace kerncap::cli {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

struct ServeArgs {
  std::string dir;
  double idle_timeout = 1800;
  int device = -1;
  std::string footprint = "auto";
  bool stop = false;
  bool status = false;
  bool json = false;
  bool no_relocate = false;
};

std::atomic<bool> g_interrupted{false};
void on_signal(int) { g_interrupted = true; }

// SIGINT, SIGTERM and SIGHUP end the loop between requests (no SA_RESTART: a wait wakes).
void catch_signals() {
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP})
    if (::sigaction(s, &sa, nullptr) != 0) input_error(fmt::format("sigaction({}): {}", s, std::strerror(errno)));
}

// The files whose change makes the open session answer differently from a fresh process:
// the manifest (a new capture), the footprint (strength) and OUT/compare.json (the default spec).
std::vector<fs::path> watched(const fs::path& capture_dir) {
  return {capture_dir / format::kManifestName, capture_dir / format::kFootprintJson,
          capture_dir.parent_path() / format::out::kCompareSpec};
}

void stop_server(const std::string& dir) {
  const fs::path key = serve::server_dir(dir);
  serve::Request r;
  r.op = serve::Op::Stop;
  const serve::CallResult c = serve::call(serve::socket_name(key, ::geteuid()), r, std::chrono::milliseconds(5000));
  switch (c.status) {
    case serve::CallResult::Status::NoServer:
      std::printf("kerncap serve: none is running for %s\n", key.c_str());
      return;
    case serve::CallResult::Status::Failed:
      input_error(fmt::format("could not stop the kerncap serve of {}: {}", key.string(), c.why));
    case serve::CallResult::Status::Answered:
      std::printf("kerncap serve: stopped the server of %s (pid %d)\n", key.c_str(), c.server_pid);
  }
}

// Whether a server answers for DIR, and what it serves (the Python API waits on this to know a
// server it started is ready). Exit 0: serving; 1: not.
void server_status(const std::string& dir, bool as_json, int& exit_code) {
  const fs::path key = serve::server_dir(dir);
  serve::Request r;
  r.op = serve::Op::Ping;
  const serve::CallResult c = serve::call(serve::socket_name(key, ::geteuid()), r, std::chrono::milliseconds(5000));
  const bool serving = c.status == serve::CallResult::Status::Answered && c.response.ok;
  exit_code = serving ? 0 : 1;
  if (as_json) {
    json doc = {{"format", "kerncap-serve-status"}, {"version", kServeStatusVersion}, {"dir", key.string()},
                {"serving", serving}, {"socket", serve::socket_name(key, ::geteuid())}};
    if (serving) {
      doc["pid"] = c.server_pid;
      doc["server"] = c.response.server;
    } else if (c.status == serve::CallResult::Status::Failed) {
      doc["why"] = c.why;
    }
    std::printf("%s\n", doc.dump().c_str());
    return;
  }
  if (serving)
    std::printf("kerncap serve: %s is served by pid %d (%llu evaluations so far)\n", key.c_str(), c.server_pid,
                static_cast<unsigned long long>(c.response.server.value("served", uint64_t{0})));
  else if (c.status == serve::CallResult::Status::Failed)
    std::printf("kerncap serve: %s: a server is there but does not answer: %s\n", key.c_str(), c.why.c_str());
  else
    std::printf("kerncap serve: none is running for %s\n", key.c_str());
}

// Every descriptor above stdio closes at exec: what a library opened without O_CLOEXEC (the
// driver's, CUPTI's for timing) would otherwise stay open in the new image, which opens its
// own, one more set per restart (issue 38's soak: a Session's serve child gained about one fd
// per faulting candidate).
void close_at_exec() {
  std::vector<int> fds;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) fds.push_back(std::stoi(name));
  }
  for (int fd : fds)
    if (fd > 2) ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // the directory's own descriptor is closed by now
}

// Replaces this process by the same command (argv from /proc/self/cmdline); returns only when
// that fails, as an Error(Device).
[[noreturn]] void exec_self() {
  close_at_exec();
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  if (args.empty()) device_error("kerncap serve cannot start again: /proc/self/cmdline is unreadable");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  device_error(fmt::format("kerncap serve cannot start again: execv: {}", std::strerror(errno)));
}

// The captured image, evaluated once: the session must reproduce the application's result
// before it judges anything else.
void first_evaluation(replay::EvaluationSession& es, const std::string& dir) {
  replay::EvaluateOptions o;
  o.time = false;
  const replay::Evaluation e = es.evaluate(nullptr, o);
  std::printf("kerncap serve: the captured image: %s (%.3f s)\n", e.line.c_str(), e.seconds);
  std::fflush(stdout);
  if (!e.pass())
    fail(ErrorKind::Mismatch, fmt::format("the captured image does not reproduce the application's result in {}; "
                                          "run `kerncap validate {} --baseline` to see why",
                                          dir, dir));
}

void run_serve(const ServeArgs& a, int& exit_code) {
  if (a.stop && a.status) usage_error("--stop and --status: give one");
  if (a.json && !a.status) usage_error("--json goes with --status");
  if (a.stop) {
    stop_server(a.dir);
    exit_code = 0;
    return;
  }
  if (a.status) {
    server_status(a.dir, a.json, exit_code);
    return;
  }
  if (!(a.idle_timeout > 0) || !std::isfinite(a.idle_timeout))
    usage_error(fmt::format("--idle-timeout {}: expected seconds > 0", a.idle_timeout));
  const FootprintUse use = footprint_use_from(a.footprint);
  format::refuse_window_capture(a.dir, "kerncap serve", "Validate it with `kerncap window validate " + a.dir + "`.");
  const fs::path key = serve::server_dir(a.dir);
  // The name first: a second server for this directory is refused before any GPU work.
  serve::Fd listener = serve::listen_on(serve::socket_name(key, ::geteuid()));

  const auto capture = std::make_shared<const format::Capture>(format::open_capture(a.dir));
  const auto fp = footprint_for(*capture, a.dir, use, false);
  replay::Options opt;
  opt.capture = a.dir;
  opt.opened = capture;
  opt.allow_relocate = !a.no_relocate;
  if (a.device >= 0) opt.device = a.device;
  replay::EvaluationSession es;
  replay::open_evaluation_session(es, opt, fp ? &*fp : nullptr);
  first_evaluation(es, a.dir);
  // What the first variant would otherwise pay inside a client's request, after every restart
  // too: the SASS's element types (nvdisasm, forked from this CUDA process), the comparison
  // check, the kept expected bytes (Evaluator::prepare; each made once per session either way,
  // no verdict changes). Not CUPTI's kernel records: a server whose requests seldom time would
  // collect them for good. Issue 38's soak, which restarts the server every 40th request (a
  // faulting candidate), saw a served `spec` mean of 170-300 ms that a few requests must
  // carry: most likely these, paid again after each restart.
  es.evaluation_loop().prepare(/*timing=*/false);

  const replay::Session& s = *es.session;
  const fs::path capture_dir = s.capture().dir;
  const serve::FileStamps opened(watched(capture_dir));
  ServerInfo info;
  info.pid = ::getpid();
  info.dir = key.string();
  info.device = s.device().ordinal;
  if (a.device >= 0) info.device_option = a.device;
  info.strong = es.strong();
  info.footprint = a.footprint;
  info.device_line = replay::device_line(s);
  info.compare_json = (capture_dir.parent_path() / format::out::kCompareSpec).string();
  const replay::PlacementStats p = s.address_space().stats();
  info.placement = placement_json(p);
  info.kerncap = KERNCAP_VERSION;

  bool restart = false;  // a candidate's fault left this process's CUDA unusable
  auto evaluate = [&](const serve::Request& r, bool& stop) -> json {
    if (const fs::path* f = opened.changed())
      throw serve::Stale(fmt::format("{} changed since kerncap serve opened the capture; restart kerncap serve",
                                     f->string()));
    const replay::EvaluateOptions o = replay::evaluate_options_from_json(r.options, es.session->capture());
    std::optional<replay::VariantImage> image;
    if (r.cubin) {
      std::error_code ec;
      if (!fs::is_regular_file(*r.cubin, ec)) input_error(fmt::format("{} is not a regular file", *r.cubin));
      image = replay::variant_image(format::read_file(*r.cubin), r.image.value_or(*r.cubin));
    }
    const replay::Evaluation e = es.evaluate(image ? &*image : nullptr, o);
    std::printf("kerncap serve: %s: %s (%.3f s)\n", e.image.c_str(), e.line.c_str(), e.seconds);
    std::fflush(stdout);
    if (e.context_lost) restart = stop = true;  // answered first; then a fresh process takes over
    return e.to_json();
  };
  auto log = [](const std::string& line) {
    std::printf("kerncap serve: %s\n", line.c_str());
    std::fflush(stdout);
  };
  serve::ServerOptions so;
  so.name = serve::socket_name(key, ::geteuid());
  so.idle_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.idle_timeout * 1000));
  auto server = std::make_unique<serve::Server>(so, std::move(listener), info.to_json(), evaluate, log);
  catch_signals();
  std::printf("kerncap serve: %s ready (pid %d); `kerncap validate %s ...` now evaluates in this process; stop with "
              "Ctrl-C or `kerncap serve --stop %s`\n",
              key.c_str(), ::getpid(), a.dir.c_str(), a.dir.c_str());
  std::fflush(stdout);
  const serve::Server::End end = server->run(&g_interrupted);
  const uint64_t served = server->served();
  if (restart) {
    // CUDA cannot be used again in this process (a sticky error): the same command in a fresh
    // one, same pid, once the socket is closed (clients meanwhile validate in their own process).
    server.reset();
    es.evaluator.reset();
    es.session.reset();
    std::printf("kerncap serve: %s: a candidate's fault left this process's CUDA context unusable after %llu "
                "evaluations; starting again\n",
                key.c_str(), static_cast<unsigned long long>(served));
    std::fflush(stdout);
    exec_self();
  }
  const char* why = end == serve::Server::End::Idle          ? "idle"
                    : end == serve::Server::End::Stopped     ? "stop requested"
                    : end == serve::Server::End::Interrupted ? "interrupted"
                    : end == serve::Server::End::Stale       ? "the capture changed"
                                                             : "an evaluation failed (the CUDA context may be unusable)";
  std::printf("kerncap serve: %s stopped (%s) after %llu evaluations\n", key.c_str(), why,
              static_cast<unsigned long long>(served));
  exit_code = end == serve::Server::End::Fatal ? 3 : 0;
}

}  // namespace

void add_serve(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Keep a capture open and answer `kerncap validate` for it in this process");
  cmd->footer(
      "Opens the capture as the evaluation loop does (the session of Python's kerncap.engine.Session), checks\n"
      "that the captured image PASSes (else exit 1), then listens until --idle-timeout passes without a\n"
      "request, Ctrl-C, or `kerncap serve --stop DIR` (`--status` says whether one runs). While it runs, `kerncap validate DIR [--cubin V]` of\n"
      "the same user hands the evaluation to it (no driver start, no restore from the capture files) and\n"
      "prints the same verdict (the one judge: every judging flag and OUT/kerncap.toml are honoured), saying\n"
      "`evaluated by kerncap serve (pid N)`; validations that open a session otherwise (another device or\n"
      "strength, --grid/--block, --no-relocate, --verify) run in their own process and say why. A candidate\n"
      "whose fault costs this process its CUDA context is answered, then the server starts itself again.\n"
      "`make serve` in a reproducer runs it. The socket is an abstract Unix socket named from the user and\n"
      "the directory: nothing is written into DIR; only processes of the same user are answered. See\n"
      "docs/engine.md (kerncap serve) and docs/contracts.md (the protocol).");
  cmd->add_option("dir", a->dir, "Reproducer directory (OUT) or its capture/ folder")->required();
  cmd->add_option("--idle-timeout", a->idle_timeout, "Stop after this many seconds without a request")
      ->default_val(1800);
  cmd->add_option("--device", a->device,
                  "Replay on this CUDA device (default: as validate chooses); validations that do not name the "
                  "same device run in their own process")
      ->check(CLI::Range(0, 1023));
  cmd->add_option("--footprint", a->footprint,
                  "auto: strong with the capture's footprint, measured once now if missing; never: weak; require: "
                  "fail without one (validations answered must ask for the same strength)")
      ->default_val("auto");
  cmd->add_flag("--no-relocate", a->no_relocate,
                "Fail instead of moving a captured range that cannot come back at its address");
  cmd->add_flag("--stop", a->stop, "Stop the server of DIR (sends it a stop request) and exit");
  cmd->add_flag("--status", a->status,
                "Say whether a server answers for DIR and exit: 0 serving, 1 not (nothing is started)");
  cmd->add_flag("--json", a->json, "With --status: one JSON document (kerncap-serve-status)");
  add_store_option(cmd);
  cmd->callback([a, &exit_code] { run_serve(*a, exit_code); });
}

}  // namespace kerncap::cli
