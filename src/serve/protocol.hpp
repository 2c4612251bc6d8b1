#pragma once
// The contract between `kerncap serve` and its clients (`kerncap validate` in auto mode):
// one JSON object per line each way over a Unix-domain socket, one request per connection.
//   request  {"kerncap_serve": 1, "op": "ping" | "evaluate" | "stop",
//             "cubin": "/abs/path" (evaluate; absent: the captured image),
//             "image": "how messages name it" (evaluate; default: cubin),
//             "options": {...kc_evaluate's options, evaluate.hpp...}}
//   response {"kerncap_serve": 1, "ok": true|false,
//             "evaluation": {...} (evaluate), "server": {...} (ping and stop),
//             "error": {"kind": "...", "message": "..."} (when not ok)}
// Both sides check the version on read: another version is a ProtocolError, and a client
// then validates in its own process. Bump kServeVersion when a field changes meaning;
// adding a field does not need a bump (readers skip what they do not know).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace kerncap::serve {

inline constexpr int kServeVersion = 1;
inline constexpr const char* kVersionKey = "kerncap_serve";
// The most bytes one message may have, its newline included (a request is a path and a few
// options; a response an evaluation: its regions are bounded by the capture's).
inline constexpr size_t kMaxRequest = 64 * 1024;
inline constexpr size_t kMaxResponse = 64 * 1024 * 1024;

enum class Op { Ping, Evaluate, Stop };
std::string_view to_string(Op op);

// A message that does not follow the contract (malformed JSON, wrong version, unknown op,
// a field of the wrong type). What the other side sent, never a kerncap::Error of ours.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Request {
  Op op = Op::Ping;
  std::optional<std::string> cubin;  // absolute path; none: the captured image
  std::optional<std::string> image;  // how messages name the image (the path as the user gave it)
  nlohmann::json options = nlohmann::json::object();
};

// Error kinds on the wire: kerncap::ErrorKind's ("usage", "input", "device", "mismatch",
// "internal"), and the server's own: "protocol" (the request broke the contract) and
// "stale" (the capture changed under the server: the client validates itself).
struct WireError {
  std::string kind;
  std::string message;
};
std::string_view kind_name(ErrorKind k);
std::optional<ErrorKind> error_kind(std::string_view name);  // none: "protocol", "stale", unknown

struct Response {
  bool ok = true;
  nlohmann::json evaluation;  // null unless an evaluation
  nlohmann::json server;      // null unless ping/stop: who answers
  std::optional<WireError> error;
};

// One line each, without the newline; encode never throws for what decode accepts.
std::string encode(const Request& r);
std::string encode(const Response& r);
// Throw ProtocolError naming what is wrong (`line` without its newline).
Request decode_request(std::string_view line);
Response decode_response(std::string_view line);

}  // namespace kerncap::serve
