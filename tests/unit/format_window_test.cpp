// window.json, the operations of a window of launches: what the library writes reads back
// the same, and the strict reader refuses what the writer never writes (untrusted input:
// wrong types, sizes out of bounds, a newer version, names that would leave the directory).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "common/error.hpp"
#include "format/protocol.hpp"
#include "format/window.hpp"

using namespace kerncap::format;

namespace {

Window sample() {
  Window w;
  w.from = "rms_norm";
  w.from_dispatch = 2;
  w.to = "silu";
  w.to_dispatch = 0;
  w.stream = 0x5000;
  WindowOp k;
  k.kind = WindowOp::Kind::Kernel;
  k.launch_index = 7;
  k.mangled = "_Z8rms_normPfPKfi";
  k.image_kind = "cubin";
  k.image_hash = 0xfedcba9876543210ull;
  k.grid = {64, 1, 1};
  k.block = {256, 1, 1};
  k.shared_mem_bytes = 1024;
  k.params = {{0, 8}, {8, 8}, {16, 4}};
  k.params_size = 24;
  k.launch_attrs.push_back({8, "priority", {1, 0, 0, 0}});
  k.func_attrs.push_back({8, "max_dynamic_shared_size_bytes", 1024});
  k.in_app_ns = 4100;
  k.in_app_start_ns = 0;
  w.ops.push_back(k);
  WindowOp m;
  m.kind = WindowOp::Kind::Memset;
  m.dst = 0x7f0000001000ull;
  m.value = 0xdeadbeef;
  m.element_size = 4;
  m.width = 256;
  w.ops.push_back(m);
  WindowOp c;
  c.kind = WindowOp::Kind::CopyD2D;
  c.dst = 0x7f0000002000ull;
  c.src = 0x7f0000003000ull;
  c.bytes = 4096;
  w.ops.push_back(c);
  k.mangled = "_Z4siluPfi";
  k.image_hash = 0x1234;
  k.uncaptured_globals = {"table"};
  w.ops.push_back(k);
  w.in_app_window_ns = 9000;
  w.in_app_kernels_ns = 8200;
  w.foreign_ops = 2;
  w.foreign_examples = {"kernel x on another stream"};
  return w;
}

// `mutate` changes the written document; the reader must refuse it with `needle` in the message.
void expect_refused(const std::function<void(nlohmann::json&)>& mutate, const std::string& needle) {
  nlohmann::json j = to_json(sample());
  mutate(j);
  try {
    window_from_json(j);
    ADD_FAILURE() << "accepted: " << needle;
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(FormatWindow, RoundTrip) {
  const Window w = sample();
  const Window r = window_from_json(nlohmann::json::parse(to_json(w).dump()));
  EXPECT_EQ(r.version, kWindowVersion);
  EXPECT_EQ(r.from, "rms_norm");
  EXPECT_EQ(r.from_dispatch, 2u);
  EXPECT_EQ(r.to, "silu");
  EXPECT_EQ(r.stream, 0x5000u);
  ASSERT_EQ(r.ops.size(), 4u);
  EXPECT_EQ(r.kernels(), 2u);
  const WindowOp& k = r.ops[0];
  EXPECT_EQ(k.mangled, "_Z8rms_normPfPKfi");
  EXPECT_EQ(k.image_hash, 0xfedcba9876543210ull);  // 64 bits survive (hex text)
  EXPECT_EQ(k.grid, (std::array<uint32_t, 3>{64, 1, 1}));
  EXPECT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[2].offset, 16u);
  ASSERT_EQ(k.launch_attrs.size(), 1u);
  EXPECT_EQ(k.launch_attrs[0].raw, (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(k.func_attrs[0].value, 1024);
  EXPECT_EQ(k.in_app_ns, 4100u);
  EXPECT_EQ(r.ops[1].kind, WindowOp::Kind::Memset);
  EXPECT_EQ(r.ops[1].dst, 0x7f0000001000ull);
  EXPECT_EQ(r.ops[1].value, 0xdeadbeefu);
  EXPECT_EQ(r.ops[2].kind, WindowOp::Kind::CopyD2D);
  EXPECT_EQ(r.ops[2].bytes, 4096u);
  EXPECT_EQ(r.ops[3].uncaptured_globals, std::vector<std::string>{"table"});
  EXPECT_EQ(r.in_app_window_ns, 9000u);
  EXPECT_EQ(r.foreign_ops, 2u);
}

TEST(FormatWindow, FileNamesAreDerivedNotRead) {
  EXPECT_EQ(window_params_file(3), "window/op-000003.params");
  EXPECT_EQ(window_image_file(0xab, "cubin"), "image/00000000000000ab.cubin");
  // The document names no file: a crafted "params" path has nowhere to go.
  const std::string text = to_json(sample()).dump();
  EXPECT_EQ(text.find("window/"), std::string::npos);
  EXPECT_EQ(text.find("image/"), std::string::npos);
}

TEST(FormatWindow, StrictReader) {
  expect_refused([](auto& j) { j["format"] = "kerncap-capture"; }, "kerncap-window");
  expect_refused([](auto& j) { j["version"] = kWindowVersion + 1; }, "newer kerncap");
  expect_refused([](auto& j) { j["version"] = 0; }, "version");
  expect_refused([](auto& j) { j["version"] = "1"; }, "version");
  expect_refused([](auto& j) { j["ops"] = nlohmann::json::array(); }, "is empty");
  expect_refused([](auto& j) { j["ops"].erase(0); }, "must be a kernel launch");
  expect_refused([](auto& j) { j["ops"][1]["kind"] = "graph"; }, "unknown operation kind");
  expect_refused([](auto& j) { j["ops"][0]["image_kind"] = "../../etc"; }, "cubin, fatbin or ptx");
  expect_refused([](auto& j) { j["ops"][0]["image_hash"] = 12; }, "image_hash");
  expect_refused([](auto& j) { j["ops"][0]["grid"] = {0, 1, 1}; }, "grid");
  expect_refused([](auto& j) { j["ops"][0]["block"] = {1024, 2, 1}; }, "threads");
  expect_refused([](auto& j) { j["ops"][0]["params"][2] = {20, 8}; }, "outside the parameter buffer");
  expect_refused([](auto& j) { j["ops"][0]["params_size"] = (1 << 20) + 1; }, "params_size");
  expect_refused([](auto& j) { j["ops"][0]["mangled"] = ""; }, "is empty");
  expect_refused([](auto& j) { j["ops"][0]["cooperative"] = 1; }, "cooperative");
  expect_refused([](auto& j) { j["ops"][0]["attributes"][0]["raw"] = "0g"; }, "hex");
  expect_refused([](auto& j) { j["ops"][1]["element_size"] = 3; }, "1, 2 or 4");
  expect_refused([](auto& j) { j["ops"][1]["element_size"] = 8; }, "element_size");
  expect_refused([](auto& j) {
    j["ops"][1]["element_size"] = 1;
    j["ops"][1]["value"] = 256;
  }, "does not fit");
  expect_refused([](auto& j) { j["ops"][2]["bytes"] = -1; }, "bytes");
  expect_refused([](auto& j) { j["ops"][2]["dst"] = 4096; }, "dst");
  expect_refused([](auto& j) { j["foreign_examples"] = std::vector<std::string>(kMaxForeignExamples + 1, "x"); },
                 "foreign_examples");
  expect_refused([](auto& j) { j["in_app_window_ns"] = -5; }, "in_app_window_ns");
  expect_refused([](auto& j) { j.erase("stream"); }, "stream");
}

TEST(FormatWindow, ReadFromADirectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("kerncap-window-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(is_window_capture(dir));
  EXPECT_THROW(read_window(dir), kerncap::Error);  // absent
  { std::ofstream(dir / kWindowFile) << to_json(sample()).dump(); }
  EXPECT_TRUE(is_window_capture(dir));
  EXPECT_EQ(read_window(dir).ops.size(), 4u);
  { std::ofstream(dir / kWindowFile) << "{\"format\": \"kerncap-window\", "; }
  EXPECT_THROW(read_window(dir), kerncap::Error);  // truncated
  // A link is not followed (the reader opens names confined to the directory).
  std::filesystem::remove(dir / kWindowFile);
  { std::ofstream(dir / "elsewhere.json") << to_json(sample()).dump(); }
  std::filesystem::create_symlink(dir / "elsewhere.json", dir / kWindowFile);
  EXPECT_THROW(read_window(dir), kerncap::Error);
  EXPECT_THROW(is_window_capture(dir), kerncap::Error);  // a link: refused, not taken for a window
  // A directory (or FIFO) named window.json is no window and no ordinary capture: a clear error.
  std::filesystem::remove(dir / kWindowFile);
  std::filesystem::create_directory(dir / kWindowFile);
  try {
    is_window_capture(dir);
    ADD_FAILURE() << "a directory named window.json must be refused";
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir / kWindowFile);
  ASSERT_EQ(::mkfifo((dir / kWindowFile).c_str(), 0600), 0);
  EXPECT_THROW(is_window_capture(dir), kerncap::Error);
  std::filesystem::remove_all(dir);
}

// The one-launch commands refuse a window's directory, given as OUT or as OUT/capture.
TEST(FormatWindow, OneLaunchCommandsRefuseAWindowCapture) {
  const auto out = std::filesystem::temp_directory_path() / ("kerncap-window-refuse-" + std::to_string(::getpid()));
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out / "capture");
  EXPECT_NO_THROW(refuse_window_capture(out, "kerncap footprint", "x"));  // an ordinary capture
  EXPECT_NO_THROW(refuse_window_capture(out / "capture", "kerncap footprint", "x"));
  { std::ofstream(out / "capture" / kWindowFile) << to_json(sample()).dump(); }
  for (const auto& dir : {out, out / "capture"}) {
    try {
      refuse_window_capture(dir, "kerncap prune", "Not pruned.");
      ADD_FAILURE() << dir << " holds a window";
    } catch (const kerncap::Error& e) {
      EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input);
      const std::string m = e.what();
      EXPECT_NE(m.find("holds a window of launches (window.json), which kerncap prune does not take"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("Not pruned."), std::string::npos) << m;
    }
  }
  std::filesystem::remove_all(out);
}

// A host-to-device copy: its kind and bounds read back; its bytes live in a derived file.
TEST(FormatWindow, HostToDeviceCopy) {
  Window w = sample();
  WindowOp c;
  c.kind = WindowOp::Kind::CopyH2D;
  c.dst = 0x7000;
  c.src = 0x1234;
  c.bytes = 4096;
  w.ops.push_back(c);
  nlohmann::json j = to_json(w);
  EXPECT_EQ(j["ops"].back()["kind"], "copy_h2d");
  const Window r = window_from_json(j);
  EXPECT_EQ(r.ops.back().kind, WindowOp::Kind::CopyH2D);
  EXPECT_EQ(r.ops.back().bytes, 4096u);
  EXPECT_EQ(window_h2d_file(3), "window/op-000003.h2d");
  j["ops"].back()["bytes"] = kMaxWindowH2DBytes + 1;
  EXPECT_THROW(window_from_json(j), kerncap::Error);
  j["ops"].back()["bytes"] = kMaxWindowH2DBytes;
  j["ops"].push_back(j["ops"].back());  // two of them: more than a window keeps
  EXPECT_THROW(window_from_json(j), kerncap::Error);
}

// KERNCAP_WINDOW_GRAPH: the library's side of `kerncap window extract --graph`, and the
// capture mode it allows without KERNCAP_KERNEL.
TEST(FormatWindow, GraphWindowConfigParsesAndPrintsBack) {
  const auto lookup = [](std::map<std::string, std::string> env) {
    return [env](std::string_view name) -> const char* {
      const auto it = env.find(std::string(name));
      return it == env.end() ? nullptr : it->second.c_str();
    };
  };
  std::vector<std::string> problems;
  Config c = config_from_env(
      lookup({{"KERNCAP_MODE", "capture"}, {"KERNCAP_OUTPUT", "/x"}, {"KERNCAP_WINDOW_GRAPH", "2:exp_kernel"}}), &problems);
  EXPECT_TRUE(problems.empty()) << problems[0];
  EXPECT_EQ(c.mode, Mode::Capture);
  EXPECT_TRUE(c.window_graph);
  EXPECT_EQ(c.window_graph_launch, 2u);
  EXPECT_EQ(c.window_graph_kernel, "exp_kernel");
  EXPECT_EQ(c.to_env().at("KERNCAP_WINDOW_GRAPH"), "2:exp_kernel");
  c = config_from_env(lookup({{"KERNCAP_MODE", "capture"}, {"KERNCAP_OUTPUT", "/x"}, {"KERNCAP_WINDOW_GRAPH", "0"}}),
                      &problems);
  EXPECT_TRUE(c.window_graph);
  EXPECT_EQ(c.window_graph_kernel, "");
  EXPECT_EQ(c.to_env().at("KERNCAP_WINDOW_GRAPH"), "0");
  problems.clear();
  c = config_from_env(lookup({{"KERNCAP_MODE", "capture"}, {"KERNCAP_OUTPUT", "/x"}, {"KERNCAP_WINDOW_GRAPH", "x:y"}}),
                      &problems);
  EXPECT_FALSE(problems.empty());
  EXPECT_EQ(c.mode, Mode::Off);  // neither a graph window nor a kernel: nothing to capture
}

TEST(FormatWindow, AGraphWindowReadsBackAndMayBeginWithACopy) {
  Window w = sample();
  w.to.clear();
  w.graph = WindowGraph{3, 9};
  WindowOp copy;
  copy.kind = WindowOp::Kind::CopyD2D;
  copy.dst = 0x1000;
  copy.src = 0x2000;
  copy.bytes = 64;
  w.ops.insert(w.ops.begin(), copy);
  const Window r = window_from_json(nlohmann::json::parse(to_json(w).dump()));
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(r.graph->launch, 3u);
  EXPECT_EQ(r.graph->nodes, 9u);
  EXPECT_EQ(r.ops.size(), w.ops.size());
  nlohmann::json j = to_json(w);
  j["graph"]["nodes"] = "9";
  EXPECT_THROW(window_from_json(j), kerncap::Error);
  j = to_json(w);
  j["graph"] = 3;
  EXPECT_THROW(window_from_json(j), kerncap::Error);
}

namespace {

// sample() with a second stream forked and joined by two events (version 2).
Window two_streams() {
  Window w = sample();
  w.streams = 2;
  w.events = 2;
  w.stream_handles = {0x5000, 0x6000};
  auto ev = [](WindowOp::Kind kind, uint32_t stream, uint32_t event) {
    WindowOp o;
    o.kind = kind;
    o.stream = stream;
    o.event = event;
    return o;
  };
  std::vector<WindowOp> ops = {w.ops[0], ev(WindowOp::Kind::EventRecord, 0, 0), ev(WindowOp::Kind::EventWait, 1, 0)};
  WindowOp side = w.ops[1];  // the memset, on the other stream
  side.stream = 1;
  ops.push_back(side);
  ops.push_back(ev(WindowOp::Kind::EventRecord, 1, 1));
  ops.push_back(ev(WindowOp::Kind::EventWait, 0, 1));
  ops.push_back(w.ops[3]);
  w.ops = ops;
  return w;
}

void expect_refused_doc(const nlohmann::json& j, const std::string& needle) {
  try {
    window_from_json(j);
    ADD_FAILURE() << "accepted: " << needle;
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(FormatWindow, StreamsAndEventsRoundTripInVersionTwo) {
  const Window w = two_streams();
  const nlohmann::json j = to_json(w);
  EXPECT_EQ(j.at("version"), 2);
  EXPECT_EQ(j.at("streams"), 2);
  const Window back = window_from_json(j);
  ASSERT_EQ(back.ops.size(), w.ops.size());
  EXPECT_EQ(back.streams, 2u);
  EXPECT_EQ(back.events, 2u);
  EXPECT_EQ(back.stream_handles, (std::vector<uint64_t>{0x5000, 0x6000}));
  for (size_t i = 0; i < w.ops.size(); ++i) {
    EXPECT_EQ(back.ops[i].kind, w.ops[i].kind) << i;
    EXPECT_EQ(back.ops[i].stream, w.ops[i].stream) << i;
    EXPECT_EQ(back.ops[i].event, w.ops[i].event) << i;
  }
  EXPECT_EQ(to_json(back), j);
  std::string why;
  EXPECT_TRUE(back.one_stream_run(0, 0, &why));
  EXPECT_FALSE(back.one_stream_run(0, 1, &why));  // an event record
  EXPECT_NE(why.find("event_record"), std::string::npos) << why;
  EXPECT_FALSE(back.one_stream_run(3, 6, &why));
  EXPECT_TRUE(back.one_stream_run(6, 6, &why));
}

TEST(FormatWindow, VersionOneStillReadsAsOneStream) {
  nlohmann::json j = to_json(sample());
  j["version"] = 1;
  for (const char* key : {"streams", "events", "stream_handles"}) j.erase(key);
  for (auto& op : j["ops"]) op.erase("stream");
  const Window w = window_from_json(j);
  EXPECT_EQ(w.version, 1);
  EXPECT_EQ(w.streams, 1u);
  EXPECT_EQ(w.events, 0u);
  EXPECT_EQ(w.stream_handles, (std::vector<uint64_t>{0x5000}));
  for (const auto& op : w.ops) EXPECT_EQ(op.stream, 0u);
  EXPECT_EQ(to_json(w).at("version"), kWindowVersion);  // written back as the current version
  // A version 1 document has no stream, event or event operation.
  nlohmann::json bad = j;
  bad["ops"][1]["stream"] = 0;
  expect_refused_doc(bad, "version 1");
  bad = j;
  bad["streams"] = 1;
  expect_refused_doc(bad, "version 1");
  bad = j;
  bad["ops"][1] = {{"kind", "event_record"}};
  expect_refused_doc(bad, "unknown operation kind");
}

TEST(FormatWindow, StrictReaderOfStreamsAndEvents) {
  const nlohmann::json good = to_json(two_streams());
  auto refused = [&](const std::function<void(nlohmann::json&)>& mutate, const std::string& needle) {
    nlohmann::json j = good;
    mutate(j);
    expect_refused_doc(j, needle);
  };
  refused([](nlohmann::json& j) { j["ops"][3]["stream"] = 2; }, "stream");           // beyond `streams`
  refused([](nlohmann::json& j) { j["streams"] = 0; }, "streams");
  refused([](nlohmann::json& j) { j["streams"] = 65; }, "streams");
  refused([](nlohmann::json& j) { j["ops"][2]["event"] = 2; }, "event");             // beyond `events`
  refused([](nlohmann::json& j) { j["ops"][1].erase("event"); }, "event");
  refused([](nlohmann::json& j) { j["ops"][3]["event"] = 0; }, "event operations only");
  refused([](nlohmann::json& j) { j["ops"][0].erase("stream"); }, "stream");
  refused([](nlohmann::json& j) { j["stream_handles"] = nlohmann::json::array({"0x5000"}); }, "one handle per stream");
  refused([](nlohmann::json& j) { std::swap(j["ops"][1], j["ops"][2]); }, "no earlier operation");  // wait before record
  refused(
      [](nlohmann::json& j) {
        j["ops"][0]["stream"] = 1;
      },
      "window's own stream");
  refused([](nlohmann::json& j) { j["events"] = 0; }, "event");
}
