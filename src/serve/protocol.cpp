#include "serve/protocol.hpp"

#include <fmt/format.h>

#include "format/strict_json.hpp"

namespace kerncap::serve {
namespace {
using nlohmann::json;

// The object and its version, or ProtocolError.
json parse_checked(std::string_view line, size_t max, const char* what) {
  if (line.size() + 1 > max) throw ProtocolError(fmt::format("the {} is larger than {} bytes", what, max));
  json j;
  try {
    // Bounded nesting: a peer's deep JSON would exhaust the stack of every later copy.
    j = format::parse_bounded_json(line, format::JsonDoc{fmt::format("kerncap serve {}", what), ""});
  } catch (const Error& e) {
    throw ProtocolError(e.what());
  }
  if (!j.is_object()) throw ProtocolError(fmt::format("the {} is not a JSON object", what));
  if (!j.contains(kVersionKey))
    throw ProtocolError(fmt::format("the {} has no \"{}\" version (not a kerncap serve message)", what, kVersionKey));
  const json& v = j[kVersionKey];
  if (!v.is_number_integer() || v.get<int64_t>() != kServeVersion)
    throw ProtocolError(fmt::format("the {} speaks kerncap serve protocol {}, this kerncap speaks {} (use one kerncap "
                                    "for both)",
                                    what, v.dump(), kServeVersion));
  return j;
}

std::optional<std::string> text(const json& j, const char* key, const char* what) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_string()) throw ProtocolError(fmt::format("the {}'s \"{}\" is not a string", what, key));
  return j[key].get<std::string>();
}

}  // namespace

std::string_view to_string(Op op) {
  switch (op) {
    case Op::Ping: return "ping";
    case Op::Evaluate: return "evaluate";
    case Op::Stop: return "stop";
  }
  return "ping";
}

std::string_view kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::Usage: return "usage";
    case ErrorKind::Input: return "input";
    case ErrorKind::Device: return "device";
    case ErrorKind::Mismatch: return "mismatch";
    case ErrorKind::Internal: return "internal";
  }
  return "internal";
}

std::optional<ErrorKind> error_kind(std::string_view name) {
  for (ErrorKind k : {ErrorKind::Usage, ErrorKind::Input, ErrorKind::Device, ErrorKind::Mismatch, ErrorKind::Internal})
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

std::string encode(const Request& r) {
  json j = {{kVersionKey, kServeVersion}, {"op", to_string(r.op)}};
  if (r.cubin) j["cubin"] = *r.cubin;
  if (r.image) j["image"] = *r.image;
  if (r.op == Op::Evaluate) j["options"] = r.options.is_null() ? json::object() : r.options;
  // Invalid UTF-8 in a path is replaced rather than thrown: the server then names a file
  // that does not exist, an input error, instead of this side failing to speak.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode(const Response& r) {
  json j = {{kVersionKey, kServeVersion}, {"ok", r.ok}};
  if (!r.evaluation.is_null()) j["evaluation"] = r.evaluation;
  if (!r.server.is_null()) j["server"] = r.server;
  if (r.error) j["error"] = {{"kind", r.error->kind}, {"message", r.error->message}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Request decode_request(std::string_view line) {
  const json j = parse_checked(line, kMaxRequest, "request");
  Request r;
  const auto op = text(j, "op", "request");
  if (!op) throw ProtocolError("the request has no \"op\"");
  if (*op == "ping") r.op = Op::Ping;
  else if (*op == "evaluate") r.op = Op::Evaluate;
  else if (*op == "stop") r.op = Op::Stop;
  else throw ProtocolError(fmt::format("unknown op \"{}\" (ping, evaluate, stop)", *op));
  r.cubin = text(j, "cubin", "request");
  r.image = text(j, "image", "request");
  if (r.cubin && (r.cubin->empty() || r.cubin->front() != '/'))
    throw ProtocolError(fmt::format("the request's cubin \"{}\" is not an absolute path", *r.cubin));
  if (j.contains("options") && !j["options"].is_null()) {
    if (!j["options"].is_object()) throw ProtocolError("the request's \"options\" is not a JSON object");
    r.options = j["options"];
  }
  return r;
}

Response decode_response(std::string_view line) {
  const json j = parse_checked(line, kMaxResponse, "response");
  Response r;
  if (!j.contains("ok") || !j["ok"].is_boolean()) throw ProtocolError("the response has no boolean \"ok\"");
  r.ok = j["ok"].get<bool>();
  if (j.contains("evaluation") && !j["evaluation"].is_null()) {
    if (!j["evaluation"].is_object()) throw ProtocolError("the response's \"evaluation\" is not a JSON object");
    r.evaluation = j["evaluation"];
  }
  if (j.contains("server") && !j["server"].is_null()) {
    if (!j["server"].is_object()) throw ProtocolError("the response's \"server\" is not a JSON object");
    r.server = j["server"];
  }
  if (j.contains("error") && !j["error"].is_null()) {
    const json& e = j["error"];
    if (!e.is_object()) throw ProtocolError("the response's \"error\" is not a JSON object");
    WireError w;
    w.kind = text(e, "kind", "response's error").value_or("");
    w.message = text(e, "message", "response's error").value_or("");
    if (w.kind.empty()) throw ProtocolError("the response's error has no \"kind\"");
    r.error = std::move(w);
  }
  if (!r.ok && !r.error) throw ProtocolError("the response is not ok and has no \"error\"");
  if (r.ok && r.error) throw ProtocolError("the response is ok and has an \"error\"");
  return r;
}

}  // namespace kerncap::serve
