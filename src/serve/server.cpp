#include "serve/server.hpp"

#include <chrono>

#include <fmt/format.h>

#include "common/error.hpp"

namespace kerncap::serve {
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

Response failure(std::string kind, std::string message) {
  Response r;
  r.ok = false;
  r.error = WireError{std::move(kind), std::move(message)};
  return r;
}

}  // namespace

Server::Server(ServerOptions o, nlohmann::json info, Evaluate evaluate, Log log)
    : o_(std::move(o)), info_(std::move(info)), evaluate_(std::move(evaluate)), log_(std::move(log)) {
  listener_ = listen_on(o_.name);
}

Server::Server(ServerOptions o, Fd listener, nlohmann::json info, Evaluate evaluate, Log log)
    : o_(std::move(o)), info_(std::move(info)), evaluate_(std::move(evaluate)), log_(std::move(log)),
      listener_(std::move(listener)) {}

void Server::answer(const Fd& c, const Response& r) {
  try {
    write_line(c, encode(r), o_.write_timeout);
  } catch (const IoError& e) {
    log_(fmt::format("the client went away before its answer ({})", e.what()));
  }
}

bool Server::serve_one(const Fd& c, End& end) {
  const Peer peer = peer_of(c);
  if (peer.uid != o_.allowed_uid) {
    // Another user's process: nothing is read from it and nothing said.
    log_(fmt::format("refused a connection from pid {} of uid {} (only uid {} is served)", peer.pid, peer.uid,
                     o_.allowed_uid));
    return true;
  }
  Request req;
  try {
    req = decode_request(read_line(c, kMaxRequest, o_.read_timeout));
  } catch (const IoError& e) {
    log_(fmt::format("dropped a request from pid {}: {}", peer.pid, e.what()));
    answer(c, failure("protocol", e.what()));
    return true;
  } catch (const ProtocolError& e) {
    log_(fmt::format("refused a request from pid {}: {}", peer.pid, e.what()));
    answer(c, failure("protocol", e.what()));
    return true;
  }
  Response r;
  r.server = info_;
  r.server["served"] = served_;
  switch (req.op) {
    case Op::Ping:
      answer(c, r);
      return true;
    case Op::Stop:
      answer(c, r);
      log_(fmt::format("stop requested by pid {}", peer.pid));
      end = End::Stopped;
      return false;
    case Op::Evaluate: break;
  }
  bool stop = false;
  End why = End::Fatal;
  try {
    r.evaluation = evaluate_(req, stop);
    ++served_;
  } catch (const Error& e) {
    r = failure(std::string(kind_name(e.kind())), e.what());
    // A device error (a fault) leaves the context unusable; a bug leaves it unknown.
    if (e.kind() == ErrorKind::Device || e.kind() == ErrorKind::Internal) stop = true;
  } catch (const ProtocolError& e) {
    r = failure("protocol", e.what());
  } catch (const Stale& e) {
    r = failure("stale", e.what());
    stop = true;
    why = End::Stale;
  } catch (const std::exception& e) {
    r = failure("internal", e.what());
    stop = true;
  }
  r.server = info_;  // who answered, with every answer
  r.server["served"] = served_;
  answer(c, r);
  if (stop) {
    end = why;
    return false;
  }
  return true;
}

Server::End Server::run(const std::atomic<bool>* interrupted) {
  const End end = loop(interrupted);
  // The name is free from now on: a client finds no server instead of one that never answers.
  listener_ = Fd();
  return end;
}

Server::End Server::loop(const std::atomic<bool>* interrupted) {
  auto last = Clock::now();
  while (true) {
    if (interrupted && interrupted->load()) return End::Interrupted;
    const auto idle = std::chrono::duration_cast<milliseconds>(Clock::now() - last);
    if (idle >= o_.idle_timeout) return End::Idle;
    const milliseconds wait = std::min(o_.idle_timeout - idle, milliseconds(500));
    Fd c = accept_one(listener_, wait);
    if (!c) continue;
    End end = End::Stopped;
    bool go_on = true;
    try {
      go_on = serve_one(c, end);
    } catch (const Error& e) {
      // A socket call that failed for this connection only (peer credentials): next one.
      log_(fmt::format("dropped a connection: {}", e.what()));
    }
    last = Clock::now();
    if (!go_on) return end;
  }
}

}  // namespace kerncap::serve
