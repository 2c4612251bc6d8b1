#pragma once
// The loop of `kerncap serve`: accepts one connection at a time on the abstract socket, reads
// one request line, answers it and closes. What an evaluation does is injected (`Evaluate`),
// so the loop, the protocol and the peer checks are tested without CUDA. A client that sends
// nothing, too much or something else than the contract is answered (when it can be) and
// dropped; the loop goes on.
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "serve/protocol.hpp"
#include "serve/socket.hpp"

namespace kerncap::serve {

struct ServerOptions {
  std::string name;                                 // the abstract socket name (socket_name)
  std::chrono::milliseconds idle_timeout{1800'000};  // stop after this long without a request
  std::chrono::milliseconds read_timeout{2000};      // a request must arrive whole within this
  std::chrono::milliseconds write_timeout{5000};
  uid_t allowed_uid = ::geteuid();                   // peers of another uid are refused
};

// What the server does with an evaluate request: the response's "evaluation" (the
// evaluation's JSON) or a thrown kerncap::Error (sent as its kind and message). Set `stop`
// when the server must end after answering (its CUDA context is no longer usable).
using Evaluate = std::function<nlohmann::json(const Request& r, bool& stop)>;
// Thrown by an Evaluate that cannot answer for a reason of its own (the capture changed
// under the server): sent as error kind "stale", the client validates itself and the
// server ends.
class Stale : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// One line for the operator: a request served, a peer refused, a broken request.
using Log = std::function<void(const std::string& line)>;

class Server {
 public:
  // Listens at once: Error(Usage) when another server holds the name.
  Server(ServerOptions o, nlohmann::json info, Evaluate evaluate, Log log);
  // With a socket bound before (listen_on): `kerncap serve` takes the name before it spends
  // seconds opening the capture, so a second server for the directory is refused at once.
  Server(ServerOptions o, Fd listener, nlohmann::json info, Evaluate evaluate, Log log);

  enum class End { Idle, Stopped, Interrupted, Stale, Fatal };
  // Serves until the idle timeout, a stop request, `*interrupted` turning true (checked
  // between requests and at least twice a second) or an evaluation that asks to stop.
  End run(const std::atomic<bool>* interrupted);
  uint64_t served() const { return served_; }

 private:
  End loop(const std::atomic<bool>* interrupted);
  // Answers one connection; false when the server must end.
  bool serve_one(const Fd& c, End& end);
  void answer(const Fd& c, const Response& r);

  ServerOptions o_;
  nlohmann::json info_;  // the ping answer's "server" object
  Evaluate evaluate_;
  Log log_;
  Fd listener_;
  uint64_t served_ = 0;
};

}  // namespace kerncap::serve
