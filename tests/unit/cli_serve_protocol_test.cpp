// `kerncap serve`'s contract: one versioned JSON line each way, checked on read.
#include <gtest/gtest.h>

#include "serve/protocol.hpp"

namespace kerncap::serve {
namespace {
using nlohmann::json;

TEST(ServeProtocol, ARequestRoundTrips) {
  Request r;
  r.op = Op::Evaluate;
  r.cubin = "/tmp/a b/optimized.cubin";
  r.image = "optimized.cubin";
  r.options = {{"time", false}, {"fuzz", 3}};
  const std::string line = encode(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const Request back = decode_request(line);
  EXPECT_EQ(back.op, Op::Evaluate);
  EXPECT_EQ(back.cubin, r.cubin);
  EXPECT_EQ(back.image, r.image);
  EXPECT_EQ(back.options, r.options);
  EXPECT_EQ(json::parse(line)["kerncap_serve"], kServeVersion);
}

TEST(ServeProtocol, PingAndStopNeedNothingElse) {
  EXPECT_EQ(decode_request(R"({"kerncap_serve":1,"op":"ping"})").op, Op::Ping);
  const Request s = decode_request(R"({"kerncap_serve":1,"op":"stop"})");
  EXPECT_EQ(s.op, Op::Stop);
  EXPECT_FALSE(s.cubin);
  EXPECT_TRUE(s.options.is_object());
}

TEST(ServeProtocol, AResponseRoundTrips) {
  Response ok;
  ok.evaluation = {{"result", "PASS"}, {"line", "Result: PASS (x)"}};
  const Response a = decode_response(encode(ok));
  EXPECT_TRUE(a.ok);
  EXPECT_EQ(a.evaluation["result"], "PASS");
  EXPECT_FALSE(a.error);

  Response bad;
  bad.ok = false;
  bad.error = WireError{"input", "v.cubin does not contain the captured kernel"};
  const Response b = decode_response(encode(bad));
  EXPECT_FALSE(b.ok);
  ASSERT_TRUE(b.error);
  EXPECT_EQ(b.error->kind, "input");
  EXPECT_EQ(error_kind(b.error->kind), ErrorKind::Input);
  EXPECT_EQ(b.error->message, "v.cubin does not contain the captured kernel");
}

TEST(ServeProtocol, ErrorKindsMapBothWays) {
  for (ErrorKind k : {ErrorKind::Usage, ErrorKind::Input, ErrorKind::Device, ErrorKind::Mismatch, ErrorKind::Internal})
    EXPECT_EQ(error_kind(kind_name(k)), k);
  EXPECT_FALSE(error_kind("protocol"));
  EXPECT_FALSE(error_kind("stale"));
  EXPECT_FALSE(error_kind(""));
}

void expect_refused(const std::string& line, const std::string& says) {
  try {
    decode_request(line);
    ADD_FAILURE() << "accepted: " << line;
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(ServeProtocol, MalformedRequestsAreRefused) {
  expect_refused("", "kerncap serve request");
  expect_refused("{\"kerncap_serve\":1,", "kerncap serve request");
  expect_refused("[1,2]", "not a JSON object");
  expect_refused(R"({"op":"ping"})", "no \"kerncap_serve\" version");
  expect_refused(R"({"kerncap_serve":1})", "no \"op\"");
  expect_refused(R"({"kerncap_serve":1,"op":"launch"})", "unknown op \"launch\"");
  expect_refused(R"({"kerncap_serve":1,"op":7})", "\"op\" is not a string");
  expect_refused(R"({"kerncap_serve":1,"op":"evaluate","cubin":"relative.cubin"})", "not an absolute path");
  expect_refused(R"({"kerncap_serve":1,"op":"evaluate","cubin":3})", "\"cubin\" is not a string");
  expect_refused(R"({"kerncap_serve":1,"op":"evaluate","options":[1]})", "\"options\" is not a JSON object");
}

TEST(ServeProtocol, AnotherVersionIsRefusedBothWays) {
  expect_refused(R"({"kerncap_serve":2,"op":"ping"})", "protocol 2, this kerncap speaks 1");
  expect_refused(R"({"kerncap_serve":"1","op":"ping"})", "protocol \"1\"");
  EXPECT_THROW(decode_response(R"({"kerncap_serve":0,"ok":true})"), ProtocolError);
  EXPECT_THROW(decode_response(R"({"kerncap_serve":1.0,"ok":true})"), ProtocolError);
}

TEST(ServeProtocol, OversizeAndDeepMessagesAreRefused) {
  std::string big = R"({"kerncap_serve":1,"op":"ping","pad":")" + std::string(kMaxRequest, 'x') + "\"}";
  expect_refused(big, "larger than");
  std::string deep = R"({"kerncap_serve":1,"op":"ping","pad":)" + std::string(1000, '[') + std::string(1000, ']') + "}";
  expect_refused(deep, "kerncap serve request");
}

TEST(ServeProtocol, InconsistentResponsesAreRefused) {
  EXPECT_THROW(decode_response(R"({"kerncap_serve":1})"), ProtocolError);
  EXPECT_THROW(decode_response(R"({"kerncap_serve":1,"ok":false})"), ProtocolError);
  EXPECT_THROW(decode_response(R"({"kerncap_serve":1,"ok":true,"error":{"kind":"input","message":"m"}})"),
               ProtocolError);
  EXPECT_THROW(decode_response(R"({"kerncap_serve":1,"ok":false,"error":{"message":"m"}})"), ProtocolError);
  EXPECT_THROW(decode_response(R"({"kerncap_serve":1,"ok":true,"evaluation":"PASS"})"), ProtocolError);
}

}  // namespace
}  // namespace kerncap::serve
