#pragma once
// The client side of `kerncap serve`: one request, one answer, with the outcome told apart
// so that the caller can fall back to evaluating in its own process — no server listening,
// or a server that could not give an answer (it died, timed out, spoke another protocol,
// belongs to another user) — and say why.
#include <chrono>
#include <string>

#include "serve/protocol.hpp"

namespace kerncap::serve {

struct CallResult {
  enum class Status {
    NoServer,  // nothing listens on the name: validate in this process, nothing to say
    Answered,  // `response` holds the server's answer (which may be an error)
    Failed,    // a server was there but gave no usable answer: `why`
  };
  Status status = Status::NoServer;
  Response response;
  std::string why;
  pid_t server_pid = 0;  // from the connection's peer credentials
};

// Sends `r` to the server listening on `name` and waits up to `reply_timeout` (negative:
// no limit; the answer still ends when the server dies) for the answer. Never throws.
CallResult call(const std::string& name, const Request& r, std::chrono::milliseconds reply_timeout);

}  // namespace kerncap::serve
