#include "format/window.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/safe_file.hpp"
#include "format/strict_json.hpp"

namespace kerncap::format {
namespace {

const JsonDoc kWindowDoc{"window (window.json)", "the window capture is damaged or crafted; extract it again"};
constexpr uint64_t kMaxWindowJsonBytes = uint64_t{32} << 20;
constexpr size_t kWindowMaxName = 64 << 10;  // a mangled name
constexpr size_t kWindowMaxAttrs = 64;
constexpr size_t kWindowMaxSlots = 4096;

std::string window_hex(uint64_t v) { return fmt::format("{:#x}", v); }

std::string window_attr_hex(const std::vector<uint8_t>& b) {
  std::string s;
  for (uint8_t c : b) s += fmt::format("{:02x}", c);
  return s;
}

std::vector<uint8_t> window_attr_bytes(const JsonField& f) {
  const std::string s = f.str(256);
  if (s.size() % 2) f.fail("has an odd number of hex digits");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < s.size(); i += 2) {
    auto digit = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      f.fail("is not lowercase hex");
    };
    out.push_back(static_cast<uint8_t>(digit(s[i]) * 16 + digit(s[i + 1])));
  }
  return out;
}

std::array<uint32_t, 3> window_dims(const JsonField& f, uint32_t lo, std::array<uint32_t, 3> hi) {
  if (f.array_size() != 3) f.fail("must have 3 elements");
  return {f.elem(0).u32(lo, hi[0]), f.elem(1).u32(lo, hi[1]), f.elem(2).u32(lo, hi[2])};
}

nlohmann::json window_op_json(const WindowOp& o) {
  nlohmann::json j = {{"kind", to_string(o.kind)}, {"stream", o.stream}};
  if (o.in_app_ns) j["in_app_ns"] = *o.in_app_ns;
  if (o.in_app_start_ns) j["in_app_start_ns"] = *o.in_app_start_ns;
  switch (o.kind) {
    case WindowOp::Kind::Kernel: {
      j.update({{"launch_index", o.launch_index},
                {"mangled", o.mangled},
                {"image_kind", o.image_kind},
                {"image_hash", window_hex(o.image_hash)},
                {"grid", o.grid},
                {"block", o.block},
                {"shared_mem_bytes", o.shared_mem_bytes},
                {"cooperative", o.cooperative},
                {"params_size", o.params_size}});
      nlohmann::json slots = nlohmann::json::array();
      for (const auto& s : o.params) slots.push_back({s.offset, s.size});
      j["params"] = slots;
      nlohmann::json attrs = nlohmann::json::array();
      for (const auto& a : o.launch_attrs) attrs.push_back({{"id", a.id}, {"name", a.name}, {"raw", window_attr_hex(a.raw)}});
      j["attributes"] = attrs;
      nlohmann::json fattrs = nlohmann::json::array();
      for (const auto& a : o.func_attrs) fattrs.push_back({{"id", a.id}, {"name", a.name}, {"value", a.value}});
      j["function_attributes"] = fattrs;
      j["uncaptured_globals"] = o.uncaptured_globals;
      break;
    }
    case WindowOp::Kind::Memset:
      j.update({{"dst", window_hex(o.dst)},
                {"value", o.value},
                {"element_size", o.element_size},
                {"width", o.width},
                {"height", o.height},
                {"pitch", o.pitch}});
      break;
    case WindowOp::Kind::CopyD2D:
    case WindowOp::Kind::CopyH2D:
      j.update({{"dst", window_hex(o.dst)}, {"src", window_hex(o.src)}, {"bytes", o.bytes}});
      break;
    case WindowOp::Kind::EventRecord:
    case WindowOp::Kind::EventWait: j["event"] = o.event; break;
  }
  return j;
}

// `version` 1: one stream, no event operations (no "stream" or "event" member); 2: each op
// names its stream (< `streams`), an event operation its event (< `events`).
WindowOp window_read_op(const JsonField& f, uint64_t version, uint32_t streams, uint32_t events) {
  f.object();
  WindowOp o;
  const std::string kind = f.at("kind").str(32);
  if (kind == "kernel") o.kind = WindowOp::Kind::Kernel;
  else if (kind == "memset") o.kind = WindowOp::Kind::Memset;
  else if (kind == "copy_d2d") o.kind = WindowOp::Kind::CopyD2D;
  else if (kind == "copy_h2d") o.kind = WindowOp::Kind::CopyH2D;
  else if (version >= 2 && kind == "event_record") o.kind = WindowOp::Kind::EventRecord;
  else if (version >= 2 && kind == "event_wait") o.kind = WindowOp::Kind::EventWait;
  else f.at("kind").fail(fmt::format("is an unknown operation kind '{}'", kind));
  if (version >= 2) {
    o.stream = f.at("stream").u32(0, streams - 1);
  } else if (f.find("stream") || f.find("event")) {
    f.fail("has a stream or event member, which a version 1 window does not have");
  }
  if (o.kind == WindowOp::Kind::EventRecord || o.kind == WindowOp::Kind::EventWait) {
    if (events == 0) f.at("kind").fail("names an event, but the window has none");
    o.event = f.at("event").u32(0, events - 1);
  } else if (f.find("event")) {
    f.at("event").fail("belongs to event operations only");
  }
  if (const auto t = f.find("in_app_ns")) o.in_app_ns = t->u64();
  if (const auto t = f.find("in_app_start_ns")) o.in_app_start_ns = t->u64();
  switch (o.kind) {
    case WindowOp::Kind::Kernel: {
      o.launch_index = f.at("launch_index").u64();
      o.mangled = f.at("mangled").str(kWindowMaxName);
      if (o.mangled.empty()) f.at("mangled").fail("is empty");
      o.image_kind = f.at("image_kind").str(16);
      if (o.image_kind != "cubin" && o.image_kind != "fatbin" && o.image_kind != "ptx")
        f.at("image_kind").fail("must be cubin, fatbin or ptx");
      o.image_hash = f.at("image_hash").hex();
      o.grid = window_dims(f.at("grid"), 1, {kMaxGridX, kMaxGridYZ, kMaxGridYZ});
      o.block = window_dims(f.at("block"), 1, kMaxBlock);
      uint64_t threads = uint64_t{o.block[0]} * o.block[1] * o.block[2];
      if (threads > kMaxBlockThreads) f.at("block").fail(fmt::format("has {} threads (at most {})", threads, kMaxBlockThreads));
      o.shared_mem_bytes = f.at("shared_mem_bytes").u32(0, kMaxSharedMemBytes);
      o.cooperative = f.at("cooperative").boolean();
      o.params_size = f.at("params_size").u64(0, kMaxWindowParamBytes);
      const JsonField slots = f.at("params");
      for (size_t i = 0, n = slots.array_size(kWindowMaxSlots); i < n; ++i) {
        const JsonField s = slots.elem(i);
        if (s.array_size() != 2) s.fail("must be [offset, size]");
        ParamSlot p{s.elem(0).u32(), s.elem(1).u32(1)};
        if (uint64_t{p.offset} + p.size > o.params_size) s.fail("lies outside the parameter buffer");
        o.params.push_back(p);
      }
      const JsonField attrs = f.at("attributes");
      for (size_t i = 0, n = attrs.array_size(kWindowMaxAttrs); i < n; ++i) {
        const JsonField a = attrs.elem(i);
        o.launch_attrs.push_back({a.at("id").i32(0, 1 << 16), a.at("name").str(128), window_attr_bytes(a.at("raw"))});
      }
      const JsonField fattrs = f.at("function_attributes");
      for (size_t i = 0, n = fattrs.array_size(kWindowMaxAttrs); i < n; ++i) {
        const JsonField a = fattrs.elem(i);
        o.func_attrs.push_back({a.at("id").i32(0, 1 << 16), a.at("name").str(128), a.at("value").i32()});
      }
      const JsonField globals = f.at("uncaptured_globals");
      for (size_t i = 0, n = globals.array_size(4096); i < n; ++i) o.uncaptured_globals.push_back(globals.elem(i).str(4096));
      break;
    }
    case WindowOp::Kind::Memset:
      o.dst = f.at("dst").hex();
      o.value = f.at("value").u32();
      o.element_size = f.at("element_size").u32(1, 4);
      if (o.element_size == 3) f.at("element_size").fail("must be 1, 2 or 4");
      if (o.element_size < 4 && o.value >> (8 * o.element_size)) f.at("value").fail("does not fit the element size");
      o.width = f.at("width").u64(0, uint64_t{1} << 46);
      o.height = f.at("height").u64(1, uint64_t{1} << 32);
      o.pitch = f.at("pitch").u64(0, uint64_t{1} << 46);
      if (o.height > 1 && o.pitch < o.width * o.element_size) f.at("pitch").fail("is shorter than a row");
      break;
    case WindowOp::Kind::CopyD2D:
      o.dst = f.at("dst").hex();
      o.src = f.at("src").hex();
      o.bytes = f.at("bytes").u64(0, uint64_t{1} << 46);
      break;
    case WindowOp::Kind::CopyH2D:
      o.dst = f.at("dst").hex();
      o.src = f.at("src").hex();
      o.bytes = f.at("bytes").u64(0, kMaxWindowH2DBytes);
      break;
    case WindowOp::Kind::EventRecord:
    case WindowOp::Kind::EventWait: break;
  }
  return o;
}

}  // namespace

std::string to_string(WindowOp::Kind k) {
  switch (k) {
    case WindowOp::Kind::Memset: return "memset";
    case WindowOp::Kind::CopyD2D: return "copy_d2d";
    case WindowOp::Kind::CopyH2D: return "copy_h2d";
    case WindowOp::Kind::EventRecord: return "event_record";
    case WindowOp::Kind::EventWait: return "event_wait";
    case WindowOp::Kind::Kernel: break;
  }
  return "kernel";
}

std::string window_params_file(size_t index) { return fmt::format("window/op-{:06}.params", index); }
std::string window_h2d_file(size_t index) { return fmt::format("window/op-{:06}.h2d", index); }
std::string window_image_file(uint64_t hash, const std::string& kind) { return fmt::format("image/{:016x}.{}", hash, kind); }

size_t Window::kernels() const {
  size_t n = 0;
  for (const auto& o : ops) n += o.kind == WindowOp::Kind::Kernel;
  return n;
}

bool Window::one_stream_run(size_t first, size_t last, std::string* why) const {
  for (size_t i = first; i <= last && i < ops.size(); ++i) {
    if (ops[i].kind == WindowOp::Kind::EventRecord || ops[i].kind == WindowOp::Kind::EventWait) {
      *why = fmt::format("operation {} is an {} (event {}): the streams' dependencies are no part of a replacement",
                         i, to_string(ops[i].kind), ops[i].event);
      return false;
    }
    if (ops[i].stream != ops[first].stream) {
      *why = fmt::format("operation {} runs on the window's stream {} and operation {} on its stream {}: a "
                         "replacement stands in for operations of one stream",
                         first, ops[first].stream, i, ops[i].stream);
      return false;
    }
  }
  return true;
}

std::string window_title(const Window& w) {
  if (w.range) return fmt::format("range {}@{}", w.from, w.from_dispatch);
  if (w.graph)
    return w.from.empty() ? fmt::format("graph@{}", w.graph->launch) : fmt::format("graph {}@{}", w.from, w.graph->launch);
  return fmt::format("{}@{}..{}@{}", w.from, w.from_dispatch, w.to, w.to_dispatch);
}

nlohmann::json to_json(const Window& w) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& o : w.ops) ops.push_back(window_op_json(o));
  nlohmann::json handles = nlohmann::json::array();
  for (uint64_t h : w.stream_handles) handles.push_back(window_hex(h));
  while (handles.size() < w.streams) handles.push_back(window_hex(handles.empty() ? w.stream : 0));
  // Always the current version (a window read from version 1 is written as version 2).
  nlohmann::json j = {{"format", kWindowFormat},
                      {"version", kWindowVersion},
                      {"streams", w.streams},
                      {"events", w.events},
                      {"stream_handles", handles},
                      {"from", {{"kernel", w.from}, {"dispatch", w.from_dispatch}}},
                      {"to", {{"kernel", w.to}, {"dispatch", w.to_dispatch}}},
                      {"regex", w.regex},
                      {"stream", window_hex(w.stream)},
                      {"ops", ops},
                      {"foreign_ops", w.foreign_ops},
                      {"foreign_examples", w.foreign_examples}};
  if (w.graph) j["graph"] = {{"launch", w.graph->launch}, {"nodes", w.graph->nodes}};
  if (w.range) j["range"] = true;
  if (w.in_app_window_ns) j["in_app_window_ns"] = *w.in_app_window_ns;
  if (w.in_app_kernels_ns) j["in_app_kernels_ns"] = *w.in_app_kernels_ns;
  return j;
}

Window window_from_json(const nlohmann::json& j) {
  const JsonField top(j, kWindowDoc);
  top.object();
  if (top.at("format").str(64) != kWindowFormat) top.at("format").fail(fmt::format("is not \"{}\"", kWindowFormat));
  Window w;
  const JsonField v = top.at("version");
  const uint64_t version = v.u64();
  if (version > static_cast<uint64_t>(kWindowVersion))
    input_error(fmt::format("this window was written by a newer kerncap (window version {}); this kerncap reads "
                            "version {}: update kerncap or extract the window again with this one",
                            version, kWindowVersion));
  if (version < 1) v.fail("must be at least 1");
  w.version = static_cast<int>(version);
  const JsonField from = top.at("from"), to = top.at("to");
  w.from = from.at("kernel").str(4096);
  w.from_dispatch = from.at("dispatch").u64();
  w.to = to.at("kernel").str(4096);
  w.to_dispatch = to.at("dispatch").u64();
  w.regex = top.at("regex").boolean();
  w.stream = top.at("stream").hex();
  if (version >= 2) {
    w.streams = top.at("streams").u32(1, kMaxWindowStreams);
    w.events = top.at("events").u32(0, kMaxWindowEvents);
    const JsonField handles = top.at("stream_handles");
    if (handles.array_size(kMaxWindowStreams) != w.streams)
      handles.fail(fmt::format("must have one handle per stream ({})", w.streams));
    for (size_t i = 0; i < w.streams; ++i) w.stream_handles.push_back(handles.elem(i).hex());
  } else {
    for (const char* key : {"streams", "events", "stream_handles"})
      if (top.find(key)) top.at(key).fail("is no member of a version 1 window");
    w.stream_handles = {w.stream};
  }
  const JsonField ops = top.at("ops");
  const size_t n = ops.array_size(kMaxWindowOps);
  if (n == 0) ops.fail("is empty: a window has at least one kernel launch");
  std::vector<bool> recorded(w.events, false);
  for (size_t i = 0; i < n; ++i) {
    w.ops.push_back(window_read_op(ops.elem(i), version, w.streams, w.events));
    const WindowOp& o = w.ops.back();
    // A wait on an event no earlier operation recorded would wait on nothing in a replay (the
    // writer never writes one: a wait on a record made before the window is left out).
    if (o.kind == WindowOp::Kind::EventRecord) recorded[o.event] = true;
    if (o.kind == WindowOp::Kind::EventWait && !recorded[o.event])
      ops.elem(i).fail(fmt::format("waits on event {}, which no earlier operation of the window records", o.event));
  }
  // The capture's own launch (the manifest's) is the window's first kernel: op 0, except in a
  // graph launch's window, where memsets or copies may come before it.
  uint64_t h2d = 0;
  for (const auto& o : w.ops)
    if (o.kind == WindowOp::Kind::CopyH2D && (h2d += o.bytes) > kMaxWindowH2DBytes)
      ops.fail(fmt::format("holds more than {} bytes of host-to-device copies", kMaxWindowH2DBytes));
  w.foreign_ops = top.at("foreign_ops").u64();
  const JsonField ex = top.at("foreign_examples");
  for (size_t i = 0, m = ex.array_size(kMaxForeignExamples); i < m; ++i) w.foreign_examples.push_back(ex.elem(i).str(kWindowMaxName));
  if (const auto g = top.find("graph")) {
    g->object();
    WindowGraph wg;
    wg.launch = g->at("launch").u64();
    wg.nodes = g->at("nodes").u64();
    if (wg.nodes > kMaxWindowGraphNodes) g->at("nodes").fail(fmt::format("is more than {}", kMaxWindowGraphNodes));
    w.graph = wg;
  }
  if (const auto rg = top.find("range")) {
    w.range = rg->boolean();
    if (w.range && w.graph) rg->fail("cannot be set in a graph launch's window");
  }
  if (!w.graph && w.ops[0].kind != WindowOp::Kind::Kernel) ops.elem(0).fail("must be a kernel launch (the window's first)");
  if (w.ops[0].stream != 0) ops.elem(0).fail("must run on the window's own stream (0)");
  if (w.kernels() == 0) ops.fail("has no kernel launch");
  if (const auto t = top.find("in_app_window_ns")) w.in_app_window_ns = t->u64();
  if (const auto t = top.find("in_app_kernels_ns")) w.in_app_kernels_ns = t->u64();
  return w;
}

Window read_window(const std::filesystem::path& capture_dir) {
  const ReadOnlyFile f = ReadOnlyFile::open_in(capture_dir, kWindowFile, "the window's operations");
  const std::vector<uint8_t> bytes = f.read_all(kMaxWindowJsonBytes);
  const nlohmann::json j =
      parse_bounded_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), kWindowDoc);
  return window_from_json(j);
}

bool is_window_capture(const std::filesystem::path& capture_dir) {
  // Not followed and not guessed: a window.json that is there but no plain file (a directory,
  // a link, a FIFO) is a damaged or crafted capture, never an ordinary one (its AFTER is the
  // window's, not its first launch's: judged as one launch, a good variant would FAIL).
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(capture_dir / kWindowFile, ec);
  if (st.type() == std::filesystem::file_type::not_found) return false;
  if (ec) input_error(fmt::format("cannot look at {}: {}", (capture_dir / kWindowFile).string(), ec.message()));
  if (st.type() != std::filesystem::file_type::regular)
    input_error(fmt::format("{} is a {}, not a file: the window capture is damaged or crafted (a capture's files "
                            "must be plain files inside it); extract it again",
                            (capture_dir / kWindowFile).string(),
                            st.type() == std::filesystem::file_type::directory ? "directory"
                            : st.type() == std::filesystem::file_type::symlink ? "symbolic link"
                                                                                : "special file"));
  return true;
}

void refuse_window_capture(const std::filesystem::path& dir, std::string_view what, std::string_view instead) {
  std::error_code ec;
  // OUT or OUT/capture, as the readers take it; a directory that is neither is left to them.
  const std::filesystem::path cap =
      std::filesystem::is_directory(dir / "capture", ec) ? dir / "capture" : std::filesystem::path(dir);
  if (is_window_capture(cap))
    input_error(fmt::format("{} holds a window of launches ({}), which {} does not take: it works on one launch's "
                            "capture. {}",
                            dir.string(), kWindowFile, what, instead));
}

}  // namespace kerncap::format
