// `kerncap serve`'s transport over a real abstract socket, with a fake evaluation (no CUDA):
// names, peer credentials, a silent client, a stop request and the client's fallbacks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/error.hpp"
#include "serve/client.hpp"
#include "serve/server.hpp"
#include "serve/socket.hpp"

namespace kerncap::serve {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;

std::string unique_name() {
  static std::atomic<int> n{0};
  return "kerncap-serve-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

TEST(ServeSocket, TheNameComesFromTheUserAndTheCanonicalDirectory) {
  const fs::path base = fs::temp_directory_path() / ("kerncap_serve_name_" + std::to_string(::getpid()));
  fs::create_directories(base / "OUT" / "capture");
  std::ofstream(base / "OUT" / "capture" / "manifest.json") << "{}";
  fs::create_directories(base / "other");
  const fs::path out = server_dir(base / "OUT");
  // OUT, OUT/capture, a path with "..", and a symlink all name the same server.
  EXPECT_EQ(server_dir(base / "OUT" / "capture"), out);
  EXPECT_EQ(server_dir(base / "other" / ".." / "OUT"), out);
  fs::create_directory_symlink(base / "OUT", base / "link");
  EXPECT_EQ(server_dir(base / "link"), out);
  EXPECT_TRUE(out.is_absolute());

  const std::string a = socket_name(out, 1000);
  EXPECT_EQ(a, socket_name(out, 1000));
  EXPECT_NE(a, socket_name(out, 1001));
  EXPECT_NE(a, socket_name(server_dir(base / "other"), 1000));
  EXPECT_EQ(a.rfind("kerncap-serve-1000-", 0), 0u) << a;
  // A very long path still gives a short name (sun_path holds 107 bytes).
  EXPECT_LT(socket_name(fs::path("/" + std::string(4000, 'd')), 4294967294u).size(), 60u);
  EXPECT_THROW(server_dir(base / "missing"), Error);
  fs::remove_all(base);
}

// A server on its own thread with a fake evaluation that echoes the request.
struct Running {
  std::string name = unique_name();
  std::atomic<bool> interrupted{false};
  std::vector<std::string> log;
  std::unique_ptr<Server> server;
  std::thread thread;
  Server::End end = Server::End::Idle;

  explicit Running(ServerOptions o = {}, Evaluate ev = nullptr) {
    o.name = name;
    if (!ev)
      ev = [](const Request& r, bool&) {
        if (r.cubin && r.cubin->find("refused") != std::string::npos) input_error(*r.cubin + " is refused");
        if (r.cubin && r.cubin->find("fault") != std::string::npos) device_error("the kernel faulted");
        return json{{"result", "PASS"}, {"image", r.image.value_or("the captured image")}, {"options", r.options}};
      };
    server = std::make_unique<Server>(o, json{{"pid", ::getpid()}, {"strong", true}}, ev,
                                      [this](const std::string& l) { log.push_back(l); });
    thread = std::thread([this] { end = server->run(&interrupted); });
  }
  ~Running() {
    interrupted = true;
    if (thread.joinable()) thread.join();
  }
  void join() { thread.join(); }
};

Request ping() { return Request{}; }
Request evaluate(const std::string& cubin) {
  Request r;
  r.op = Op::Evaluate;
  r.cubin = cubin;
  r.image = "v.cubin";
  r.options = {{"time", false}};
  return r;
}

TEST(ServeRoundTrip, PingEvaluateAndTypedErrors) {
  Running s;
  CallResult p = call(s.name, ping(), milliseconds(2000));
  ASSERT_EQ(p.status, CallResult::Status::Answered) << p.why;
  EXPECT_EQ(p.response.server["strong"], true);
  EXPECT_EQ(p.response.server["served"], 0);
  EXPECT_EQ(p.server_pid, ::getpid());

  CallResult e = call(s.name, evaluate("/x/v.cubin"), milliseconds(2000));
  ASSERT_EQ(e.status, CallResult::Status::Answered) << e.why;
  EXPECT_TRUE(e.response.ok);
  EXPECT_EQ(e.response.evaluation["image"], "v.cubin");
  EXPECT_EQ(e.response.evaluation["options"]["time"], false);

  CallResult r = call(s.name, evaluate("/x/refused.cubin"), milliseconds(2000));
  ASSERT_EQ(r.status, CallResult::Status::Answered);
  EXPECT_FALSE(r.response.ok);
  EXPECT_EQ(r.response.error->kind, "input");
  EXPECT_EQ(r.response.error->message, "/x/refused.cubin is refused");
  // Still serving after an input error.
  EXPECT_EQ(call(s.name, ping(), milliseconds(2000)).response.server["served"], 1);
}

TEST(ServeRoundTrip, ADeviceErrorIsAnsweredAndEndsTheServer) {
  Running s;
  CallResult r = call(s.name, evaluate("/x/fault.cubin"), milliseconds(2000));
  ASSERT_EQ(r.status, CallResult::Status::Answered);
  EXPECT_EQ(r.response.error->kind, "device");
  s.join();
  EXPECT_EQ(s.end, Server::End::Fatal);
  EXPECT_EQ(call(s.name, ping(), milliseconds(500)).status, CallResult::Status::NoServer);
}

TEST(ServeRoundTrip, AStopRequestEndsTheServerAndFreesTheName) {
  Running s;
  Request stop;
  stop.op = Op::Stop;
  CallResult r = call(s.name, stop, milliseconds(2000));
  ASSERT_EQ(r.status, CallResult::Status::Answered);
  EXPECT_TRUE(r.response.ok);
  s.join();
  EXPECT_EQ(s.end, Server::End::Stopped);
  // The abstract name goes with the socket: a new server may take it, clients find none.
  EXPECT_EQ(call(s.name, ping(), milliseconds(500)).status, CallResult::Status::NoServer);
  EXPECT_NO_THROW(listen_on(s.name));
}

TEST(ServeRoundTrip, ASecondServerForTheSameNameIsRefused) {
  Running s;
  EXPECT_THROW(listen_on(s.name), Error);
}

TEST(ServeRoundTrip, NoServerMeansFallBackSilently) {
  const CallResult r = call(unique_name(), ping(), milliseconds(100));
  EXPECT_EQ(r.status, CallResult::Status::NoServer);
  EXPECT_TRUE(r.why.empty());
}

TEST(ServeRoundTrip, ASilentClientTimesOutAndTheServerGoesOn) {
  ServerOptions o;
  o.read_timeout = milliseconds(200);
  Running s(o);
  Fd silent = connect_to(s.name);
  ASSERT_TRUE(silent);
  // The server drops the silent client after its read timeout, answering "protocol".
  const std::string answer = read_line(silent, kMaxResponse, milliseconds(3000));
  const Response r = decode_response(answer);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error->kind, "protocol");
  CallResult p = call(s.name, ping(), milliseconds(2000));
  EXPECT_EQ(p.status, CallResult::Status::Answered) << p.why;
  ASSERT_FALSE(s.log.empty());
  EXPECT_NE(s.log.front().find("no complete line within 200 ms"), std::string::npos) << s.log.front();
}

TEST(ServeRoundTrip, BrokenRequestsAreAnsweredAndTheServerGoesOn) {
  Running s;
  for (const std::string& bad : {std::string("not json"), std::string(R"({"kerncap_serve":9,"op":"ping"})"),
                                std::string(R"({"kerncap_serve":1,"op":"reboot"})")}) {
    Fd c = connect_to(s.name);
    write_line(c, bad, milliseconds(1000));
    const Response r = decode_response(read_line(c, kMaxResponse, milliseconds(3000)));
    EXPECT_EQ(r.error->kind, "protocol") << bad;
  }
  // Oversize: refused once the limit is passed, without waiting for a newline.
  Fd c = connect_to(s.name);
  write_line(c, std::string(kMaxRequest + 10, 'x'), milliseconds(3000));
  const Response r = decode_response(read_line(c, kMaxResponse, milliseconds(3000)));
  EXPECT_NE(r.error->message.find("longer than"), std::string::npos) << r.error->message;
  EXPECT_EQ(call(s.name, ping(), milliseconds(2000)).status, CallResult::Status::Answered);
}

TEST(ServeRoundTrip, PeersOfAnotherUserAreRefused) {
  ServerOptions o;
  o.allowed_uid = ::geteuid() + 1;  // as if this process were another user
  Running s(o);
  const CallResult r = call(s.name, ping(), milliseconds(2000));
  EXPECT_EQ(r.status, CallResult::Status::Failed);
  // Closed (or reset) unanswered: a failure to fall back from, never a verdict.
  EXPECT_NE(r.why.find("no answer from kerncap serve"), std::string::npos) << r.why;
  ASSERT_FALSE(s.log.empty());
  EXPECT_NE(s.log.front().find("refused a connection"), std::string::npos);
}

TEST(ServeRoundTrip, AServerThatDiesMidRequestIsAFailureNotAVerdict) {
  Running s({}, [](const Request&, bool& stop) -> json {
    stop = true;
    throw std::runtime_error("boom");
  });
  const CallResult r = call(s.name, evaluate("/x/v.cubin"), milliseconds(2000));
  ASSERT_EQ(r.status, CallResult::Status::Answered);
  EXPECT_EQ(r.response.error->kind, "internal");
  s.join();
  // A listener that accepts and closes without answering (a server killed mid-request).
  const std::string name = unique_name();
  Fd l = listen_on(name);
  std::thread t([&] {
    Fd c = accept_one(l, milliseconds(3000));
    (void)read_line(c, kMaxRequest, milliseconds(3000));
  });
  const CallResult d = call(name, evaluate("/x/v.cubin"), milliseconds(3000));
  t.join();
  EXPECT_EQ(d.status, CallResult::Status::Failed);
  EXPECT_NE(d.why.find("no answer from kerncap serve"), std::string::npos) << d.why;
}

TEST(ServeRoundTrip, AFullBacklogIsAFailureAtOnceNotAWait) {
  // A server busy with one evaluation while more clients than its backlog queue up.
  const std::string name = unique_name();
  Fd l = listen_on(name);
  std::vector<Fd> waiting;
  bool full = false;
  for (int i = 0; i < 256 && !full; ++i) {
    try {
      waiting.push_back(connect_to(name));
    } catch (const Error&) {
      full = true;
    }
  }
  ASSERT_TRUE(full);
  const CallResult r = call(name, ping(), milliseconds(5000));
  ASSERT_EQ(r.status, CallResult::Status::Failed);
  EXPECT_NE(r.why.find("connections waiting"), std::string::npos) << r.why;
}

TEST(ServeRoundTrip, TheIdleTimeoutEndsTheServer) {
  ServerOptions o;
  o.idle_timeout = milliseconds(300);
  Running s(o);
  s.join();
  EXPECT_EQ(s.end, Server::End::Idle);
}

}  // namespace
}  // namespace kerncap::serve
