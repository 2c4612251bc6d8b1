#include "capture/window_recorder.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "capture/events.hpp"
#include "capture/graph_node_launch.hpp"
#include "capture/launch_info.hpp"
#include "capture/window_graph.hpp"
#include "capture/tool_scope.hpp"
#include "common/log.hpp"
#include "format/events.hpp"
#include "names/demangle.hpp"

namespace kerncap::capture {
namespace {

// The memory operations a window records or notes, by callback id.
enum class WindowMemCall { None, Memset8, Memset16, Memset32, CopyD2D, CopyUnified, CopyH2D, CopyD2H, Alloc };
struct WindowMemInfo {
  WindowMemCall call = WindowMemCall::None;
  bool async = false;  // on a stream (else ordered with everything, as the legacy stream is)
};

WindowMemInfo window_mem_call(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds: return {WindowMemCall::Memset8, false};
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds: return {WindowMemCall::Memset16, false};
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds: return {WindowMemCall::Memset32, false};
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: return {WindowMemCall::Memset8, true};
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz: return {WindowMemCall::Memset16, true};
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: return {WindowMemCall::Memset32, true};
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds: return {WindowMemCall::CopyD2D, false};
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: return {WindowMemCall::CopyD2D, true};
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: return {WindowMemCall::CopyUnified, false};
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: return {WindowMemCall::CopyUnified, true};
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds: return {WindowMemCall::CopyH2D, false};
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: return {WindowMemCall::CopyH2D, true};
    // Device to host: nothing for the window; a read of its results for the live-out observation.
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: return {WindowMemCall::CopyD2H, false};
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: return {WindowMemCall::CopyD2H, true};
    // Memory allocated inside the window is not in BEFORE (it did not exist at the window's start).
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: return {WindowMemCall::Alloc, false};
    default: return {};
  }
}

// Event records and stream waits (a stream joining another's work).
enum class WindowEventCall { None, Record, Wait };
WindowEventCall window_event_call(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: return WindowEventCall::Record;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: return WindowEventCall::Wait;
    default: return WindowEventCall::None;
  }
}

bool window_is_graph_launch(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

// The stream of an asynchronous call: every async parameter struct above ends with hStream,
// but their layouts differ, so each is read as its own type.
template <typename P>
const P& window_params_of(const CUpti_CallbackData* cb) {
  return *static_cast<const P*>(cb->functionParams);
}

// Why another context's stream cannot join a window: its work ran on another device (or in a
// context of its own), and the capture and its replay are the window's context's.
constexpr const char* kOtherContext =
    "it runs in another CUDA context than the window's (another device, or a context of its own): its "
    "memory and work are not in the capture";

// Work that ran in the process during the window but is not part of it: counted, a few named.
void window_add_foreign(format::Window& w, const std::string& what) {
  ++w.foreign_ops;
  if (w.foreign_examples.size() < format::kMaxForeignExamples &&
      std::find(w.foreign_examples.begin(), w.foreign_examples.end(), what) == w.foreign_examples.end())
    w.foreign_examples.push_back(what);
}

}  // namespace

WindowRecorder::WindowRecorder(const Config& config, Inventory& inventory, LaunchQueries& driver, WindowOps& ops,
                               WindowEnds& ends)
    : config_(config), inventory_(inventory), driver_(driver), ops_(ops), ends_(ends),
      end_(config.window_end, config.regex), graph_kernel_(config.window_graph_kernel, config.regex),
      from_(config.kernel, config.regex) {}

std::vector<CUpti_CallbackId> WindowRecorder::callback_ids() {
  std::vector<CUpti_CallbackId> ids;
  for (CUpti_CallbackId id = 0; id < CUPTI_DRIVER_TRACE_CBID_SIZE; ++id)
    if (window_mem_call(id).call != WindowMemCall::None || window_event_call(id) != WindowEventCall::None)
      ids.push_back(id);
  return ids;
}

WindowRecorder::State WindowRecorder::state() const {
  std::lock_guard lk(mu_);
  return state_;
}

format::Window WindowRecorder::window() const {
  std::lock_guard lk(mu_);
  std::vector<uint32_t> corr;
  format::Window w = assemble(&corr);
  fill_in_app(w, corr);
  return w;
}

bool WindowRecorder::is_end(const std::string& mangled) {
  if (!config_.window_range.empty()) return false;  // an NVTX range ends at its pop (end_now)
  const uint64_t index = end_matches_;
  if (!end_.matches(mangled, names::demangle(mangled))) return false;
  ++end_matches_;
  return index == config_.window_end_dispatch;
}

bool WindowRecorder::begin(const TargetLaunch& first) {
  LaunchArgs args;
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Waiting || !first.entry) return false;
    if (!decode_launch(first.cbid, first.entry->functionParams, &args)) return false;
    stream_ = args.stream;
    joined_ = {stream_};
    first_correlation_ = first.entry->correlationId;
    context_ = first.entry->context;
    first_launch_index_ = first.launch_index;
    window_.from = config_.kernel;
    window_.from_dispatch = config_.dispatch;
    window_.to = config_.window_end;
    window_.to_dispatch = config_.window_end_dispatch;
    window_.regex = config_.regex;
    window_.stream = reinterpret_cast<uint64_t>(stream_);
    state_ = State::Open;  // launches on other threads from now on are the window's or foreign
  }
  log::info("window: begins at launch {} of {} (stream {})", first.launch_index, names::demangle(first.mangled),
            static_cast<void*>(args.stream));
  if (!ends_.begin(first)) {
    std::lock_guard lk(mu_);
    state_ = State::Done;
    return false;
  }
  const uint64_t now = ops_.gpu_clock_ns();
  std::lock_guard lk(mu_);
  open_ns_ = now;
  format::WindowOp op;
  std::string why;
  if (!ops_.describe_kernel(first.cbid, *first.entry, first.mangled, 0, &op, &why)) {
    fail("the window's first launch cannot be recorded: " + why);
    return false;
  }
  op.launch_index = first.launch_index;
  op.params_key = 0;
  window_.ops.insert(window_.ops.begin(), std::move(op));  // launches recorded meanwhile come after it
  tags_.insert(tags_.begin(), Tag{first_correlation_, stream_});
  if (is_end(first.mangled)) {
    state_ = State::Ending;
    last_correlation_ = first_correlation_;
    last_thread_ = std::this_thread::get_id();
  }
  return true;
}

void WindowRecorder::finish(const CUpti_CallbackData& exit) {
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Ending || exit.correlationId != last_correlation_ || last_correlation_ != first_correlation_)
      return;
  }
  complete(exit);
}

void WindowRecorder::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || t_in_tool) return;
  // A graph window opens at a graph launch's entry, and ends at the same launch's exit.
  if (graphs_ && config_.window_graph && window_is_graph_launch(cbid)) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    const State gst = state_.load(std::memory_order_acquire);
    if (gst == State::Waiting && cb->callbackSite == CUPTI_API_ENTER) {
      ToolScope scope;
      on_graph_launch_entry(cb);
      return;
    }
    if (gst == State::Ending && graph_window_ends(cbid, cb)) return;
  }
  // Before and after the window every callback ends here, without the lock.
  const State st = state_.load(std::memory_order_acquire);
  if (st == State::Waiting && graphs_ && !config_.window_graph && window_is_graph_launch(cbid)) {
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    if (cb->callbackSite == CUPTI_API_ENTER) {
      ToolScope scope;
      note_graph_before(cb);
    }
    return;
  }
  if (st != State::Open && st != State::Ending && st != State::Observing) return;
  ToolScope scope;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (st == State::Observing) {
    if (cb->callbackSite != CUPTI_API_ENTER) return;
    if (window_is_graph_launch(cbid)) {
      observe_graph(cb);
      return;
    }
    if (is_launch_cbid(cbid)) observe_launch(cbid, cb);
    else observe_memory(cbid, cb);
    return;
  }
  if (is_launch_cbid(cbid)) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
      on_launch_entry(cbid, cb);
      return;
    }
    bool last = false;
    {
      std::lock_guard lk(mu_);
      last = state_ == State::Ending && cb->correlationId == last_correlation_ &&
             last_correlation_ != first_correlation_ && std::this_thread::get_id() == last_thread_;
    }
    if (last) complete(*cb);
    return;
  }
  if (window_is_graph_launch(cbid)) {
    if (cb->callbackSite == CUPTI_API_ENTER) on_graph_in_window(cb);
    else if (st == State::Ending) graph_window_ends(cbid, cb);  // a window ending with a graph's last kernel
    return;
  }
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  if (window_event_call(cbid) != WindowEventCall::None) {
    on_event_call(cbid, cb);
    return;
  }
  on_memory_op(cbid, cb);
}

void WindowRecorder::on_event_call(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  CUevent event = nullptr;
  CUstream stream = nullptr;
  const WindowEventCall call = window_event_call(cbid);
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
      const auto& p = window_params_of<cuEventRecordWithFlags_params>(cb);
      event = p.hEvent, stream = p.hStream;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      const auto& p = window_params_of<cuEventRecord_params>(cb);
      event = p.hEvent, stream = p.hStream;
      break;
    }
    default: {
      const auto& p = window_params_of<cuStreamWaitEvent_params>(cb);
      event = p.hEvent, stream = p.hStream;
      break;
    }
  }
  // Into a stream capture: a graph node, not work now (the graph's launch is what runs).
  if (driver_.stream_is_capturing(stream)) return;
  std::lock_guard lk(mu_);
  if (state_ != State::Open || graph_window_) return;
  if (window_.ops.size() >= format::kMaxWindowOps) {
    fail(fmt::format("the window has more than {} operations", format::kMaxWindowOps));
    return;
  }
  format::WindowOp op;
  if (call == WindowEventCall::Record) {
    // Events are bounded by the operations that record them (kMaxWindowEvents = kMaxWindowOps).
    last_record_[event] = stream;
    op.kind = format::WindowOp::Kind::EventRecord;
    window_.ops.push_back(op);
    tags_.push_back({0, stream, event});
    return;
  }
  // A wait on a record made before the window waits on work BEFORE holds (it is taken after a
  // synchronise): no dependency inside the window. A wait on the stream's own record: none either.
  const auto ev = last_record_.find(event);
  if (ev == last_record_.end() || ev->second == stream) return;
  op.kind = format::WindowOp::Kind::EventWait;
  window_.ops.push_back(op);
  tags_.push_back({0, stream, event, ev->second});
  // The window's stream (or one it joined) now depends on the recording stream's work: that
  // stream, and those it waited on, become part of the window.
  if (joined_.count(stream)) join(ev->second);
}

size_t WindowRecorder::take_key() {
  // The operation's index while nothing is left out (one stream: the files are numbered as
  // before), unique whatever assemble() drops.
  const size_t key = std::max(next_key_, window_.ops.size());
  next_key_ = key + 1;
  return key;
}

bool WindowRecorder::join(CUstream stream) {
  if (joined_.count(stream)) return true;
  const auto it = other_streams_.find(stream);
  if (it != other_streams_.end() && !it->second.refuse.empty()) {
    fail(fmt::format("the window's stream {} joins stream {} through events (cuStreamWaitEvent) during the window, "
                     "and that stream's work cannot be recorded: {} (e.g. {}); choose a window whose joined streams "
                     "run kernels, memsets and copies only (docs/window.md)",
                     static_cast<void*>(stream_), static_cast<void*>(stream), it->second.refuse,
                     it->second.unrecorded_example.empty() ? std::string("?") : it->second.unrecorded_example));
    return false;
  }
  if (joined_.size() >= format::kMaxWindowStreams) {
    fail(fmt::format("the window joins more than {} streams through events", format::kMaxWindowStreams));
    return false;
  }
  joined_.insert(stream);
  log::info("window: stream {} joins the window through an event ({} operation(s) there so far)",
            static_cast<void*>(stream), it == other_streams_.end() ? 0 : it->second.ops);
  // Its own earlier waits bring in the streams it depended on.
  for (size_t i = 0; i < window_.ops.size() && i < tags_.size(); ++i)
    if (window_.ops[i].kind == format::WindowOp::Kind::EventWait && tags_[i].stream == stream && !join(tags_[i].source))
      return false;
  return true;
}

void WindowRecorder::other_stream_op(CUstream stream, const std::string& what, const std::string& refuse) {
  OtherStream& o = other_streams_[stream];
  if (!o.ops++) o.example = what;
  if (refuse.empty()) return;
  ++o.unrecorded;
  if (o.unrecorded_example.empty()) o.unrecorded_example = what;
  if (o.refuse.empty()) o.refuse = refuse;
  if (joined_.count(stream)) {
    joined_.erase(stream);  // join() says why, as for a stream joined later
    join(stream);
  }
}

format::Window WindowRecorder::assemble(std::vector<uint32_t>* corr) const {
  using K = format::WindowOp::Kind;
  format::Window w = window_;
  w.ops.clear();
  corr->clear();
  // Records are kept for the events a kept wait waits on; the rest order nothing of the window.
  std::set<CUevent> waited;
  for (size_t i = 0; i < window_.ops.size() && i < tags_.size(); ++i)
    if (window_.ops[i].kind == K::EventWait && joined_.count(tags_[i].stream)) waited.insert(tags_[i].event);
  std::map<CUstream, uint32_t> streams{{stream_, 0}};
  std::map<CUevent, uint32_t> events;
  w.stream_handles = {reinterpret_cast<uint64_t>(stream_)};
  for (size_t i = 0; i < window_.ops.size() && i < tags_.size(); ++i) {
    format::WindowOp op = window_.ops[i];
    const Tag& tag = tags_[i];
    const bool event_op = op.kind == K::EventRecord || op.kind == K::EventWait;
    if (!joined_.count(tag.stream)) {
      if (!event_op)
        window_add_foreign(w, op.kind == K::Kernel ? "kernel " + op.mangled + " on another stream"
                                                   : fmt::format("a {} on another stream", to_string(op.kind)));
      continue;
    }
    if (event_op && !waited.count(tag.event)) continue;
    const auto [st, fresh] = streams.emplace(tag.stream, static_cast<uint32_t>(streams.size()));
    if (fresh) w.stream_handles.push_back(reinterpret_cast<uint64_t>(tag.stream));
    op.stream = st->second;
    if (event_op) op.event = events.emplace(tag.event, static_cast<uint32_t>(events.size())).first->second;
    w.ops.push_back(std::move(op));
    corr->push_back(tag.correlation);
  }
  for (const auto& [stream, other] : other_streams_)
    if (!joined_.count(stream))
      for (uint64_t k = 0; k < other.unrecorded; ++k) window_add_foreign(w, other.unrecorded_example);
  w.streams = static_cast<uint32_t>(streams.size());
  w.events = static_cast<uint32_t>(events.size());
  return w;
}

void WindowRecorder::observe_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  // A launch whose parameters cannot be read counts towards the horizon and reaches nothing
  // (what it reads stays unseen: a limit docs/window.md states).
  std::vector<uint8_t> params;
  if (!ops_.launch_params(cbid, *cb, &params)) params.clear();
  std::string name = cb->symbolName ? std::string(cb->symbolName) : std::string();
  if (name.empty()) {
    LaunchArgs args;
    if (decode_launch(cbid, cb->functionParams, &args)) name = driver_.kernel_name(args.f);
  }
  bool over = false;
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Observing || !observer_) return;
    ++launches_since_;
    over = observer_->on_launch(name, first_launch_index_ + launches_since_, params);
  }
  if (over) end_observation(true);
}

void WindowRecorder::observe_memory(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const WindowMemInfo info = window_mem_call(cbid);
  uint64_t src = 0, dst = 0, bytes = 0;
  std::string what;
  switch (info.call) {
    case WindowMemCall::Memset8:
    case WindowMemCall::Memset16:
    case WindowMemCall::Memset32: {
      // dstDevice and N lead every memset's parameters; the element size scales N.
      const uint64_t elem = info.call == WindowMemCall::Memset8 ? 1 : info.call == WindowMemCall::Memset16 ? 2 : 4;
      const auto& p = window_params_of<cuMemsetD8_v2_params>(cb);
      dst = p.dstDevice, bytes = p.N * elem, what = "a memset";
      break;
    }
    case WindowMemCall::CopyD2D: {
      const auto& p = window_params_of<cuMemcpyDtoD_v2_params>(cb);
      dst = p.dstDevice, src = p.srcDevice, bytes = p.ByteCount, what = "a device-to-device copy";
      break;
    }
    case WindowMemCall::CopyUnified: {
      const auto& p = window_params_of<cuMemcpy_params>(cb);
      dst = p.dst, src = p.src, bytes = p.ByteCount, what = "a copy";
      break;
    }
    case WindowMemCall::CopyH2D: {
      const auto& p = window_params_of<cuMemcpyHtoD_v2_params>(cb);
      dst = p.dstDevice, bytes = p.ByteCount, what = "a host-to-device copy";
      break;
    }
    case WindowMemCall::CopyD2H: {
      const auto& p = window_params_of<cuMemcpyDtoH_v2_params>(cb);
      src = p.srcDevice, bytes = p.ByteCount, what = "a device-to-host copy";
      break;
    }
    default: return;
  }
  std::lock_guard lk(mu_);
  if (state_ != State::Observing || !observer_) return;
  // A copy reads before it writes: a copy of a region onto itself keeps it live.
  if (src) observer_->on_read(src, bytes, what);
  if (dst) observer_->on_write(dst, bytes, what);
}

void WindowRecorder::end_observation(bool horizon) {
  format::WindowLiveOut result;
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Observing || !observer_) return;
    state_ = State::Done;
    result = observer_->result(horizon ? "horizon" : "application ended");
  }
  log::info("window: live-out observed over {} launch(es) after the window: {} of {} changed region(s) read",
            result.launches_observed, result.live().size(), result.regions.size());
  ends_.observed(result, horizon);
}

void WindowRecorder::on_launch_entry(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  LaunchArgs args;
  if (!decode_launch(cbid, cb->functionParams, &args)) return;
  // A launch into a stream that is capturing a CUDA graph does not run now: it runs when that
  // graph is launched (then recorded as the graph's nodes, if on the window's stream).
  if (driver_.stream_is_capturing(args.stream)) return;
  std::string mangled = cb->symbolName ? std::string(cb->symbolName) : std::string();
  if (mangled.empty()) mangled = driver_.kernel_name(args.f);
  std::lock_guard lk(mu_);
  ++launches_since_;
  if (state_ != State::Open) {
    if (state_ == State::Ending) foreign("kernel " + mangled + " (launched after the window's last launch began)");
    return;
  }
  if (graph_window_) {  // a graph window's operations are its graph's; another thread's launch meanwhile is not
    foreign("kernel " + (mangled.empty() ? std::string("(unnamed)") : mangled) + " launched during the graph launch");
    return;
  }
  if (args.stream != stream_) {
    // Recorded now (its parameters are read at the call), part of the window if the window's
    // stream joins this one through an event before its end, foreign otherwise.
    const std::string what = "kernel " + (mangled.empty() ? std::string("(unnamed)") : mangled) + " on another stream";
    if (cb->context != context_) {
      other_stream_op(args.stream, what, kOtherContext);
      return;
    }
    if (window_.ops.size() >= format::kMaxWindowOps) {
      fail(fmt::format("the window has more than {} operations", format::kMaxWindowOps));
      return;
    }
    format::WindowOp op;
    std::string why = "the launch has no name (the driver could not tell)";
    const size_t key = take_key();
    if (mangled.empty() || !ops_.describe_kernel(cbid, *cb, mangled, key, &op, &why)) {
      other_stream_op(args.stream, what, "a launch there cannot be recorded: " + why);
      return;
    }
    op.params_key = key;
    op.launch_index = first_launch_index_ + launches_since_;
    window_.ops.push_back(std::move(op));
    tags_.push_back({cb->correlationId, args.stream});
    other_stream_op(args.stream, what);
    return;
  }
  if (window_.ops.size() >= format::kMaxWindowOps) {
    fail(fmt::format("the window has more than {} operations", format::kMaxWindowOps));
    return;
  }
  if (mangled.empty()) {
    fail("a kernel launch in the window has no name (the driver could not tell)");
    return;
  }
  format::WindowOp op;
  std::string why;
  const size_t key = take_key();
  if (!ops_.describe_kernel(cbid, *cb, mangled, key, &op, &why)) {
    fail(fmt::format("launch {} of the window ({}) cannot be recorded: {}", window_.ops.size(),
                     names::demangle(mangled), why));
    return;
  }
  op.params_key = key;
  op.launch_index = first_launch_index_ + launches_since_;
  window_.ops.push_back(std::move(op));
  tags_.push_back({cb->correlationId, stream_});
  if (is_end(mangled)) {
    state_ = State::Ending;
    last_correlation_ = cb->correlationId;
    last_thread_ = std::this_thread::get_id();
    log::info("window: ends at its operation {} ({})", window_.ops.size() - 1, names::demangle(mangled));
  }
}

void WindowRecorder::on_graph_launch_entry(const CUpti_CallbackData* cb) {
  // cuGraphLaunch and cuGraphLaunch_ptsz both take (CUgraphExec, CUstream).
  const auto* p = static_cast<const cuGraphLaunch_ptsz_params*>(cb->functionParams);
  const std::shared_ptr<const GraphExec> g = graphs_->launched(p->hGraphExec);
  if (!g) {
    std::lock_guard lk(mu_);
    graph_unseen_ = true;  // instantiated before kerncap was loaded, or unreadable (warned then)
    return;
  }
  // On a capturing stream the graph does not run now (it becomes part of the graph captured).
  if (driver_.stream_is_capturing(p->hStream)) return;
  if (!config_.window_graph_kernel.empty() &&
      !graph_has_kernel(*g, [&](const std::string& m) { return graph_kernel_.matches(m, names::demangle(m)); }))
    return;
  const uint64_t base = 0;  // the watcher does not count launches once it has no target waiting
  std::string why;
  std::optional<std::vector<GraphWindowStep>> steps;
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Waiting || graph_matches_++ != config_.window_graph_launch) return;
    window_.from = config_.window_graph_kernel;
    window_.from_dispatch = config_.window_graph_launch;
    window_.regex = config_.regex;
    window_.stream = reinterpret_cast<uint64_t>(p->hStream);
    window_.graph = format::WindowGraph{config_.window_graph_launch, g->nodes.size()};
    stream_ = p->hStream;
    joined_ = {stream_};
    next_key_ = 0;  // no first eager launch: the graph's first kernel is described first
    context_ = cb->context;
    first_correlation_ = cb->correlationId;
    first_launch_index_ = base;
    graph_window_ = true;
    const std::vector<TrackedRange> live = inventory_.tracker.live();
    steps = plan_graph_window(
        *g,
        [&](uint64_t addr, uint64_t bytes) {
          return std::any_of(live.begin(), live.end(),
                             [&](const TrackedRange& r) { return addr >= r.base && addr - r.base + bytes <= r.size; });
        },
        format::kMaxWindowH2DBytes, &why);
    if (!steps) {
      fail(fmt::format("the graph launch {} of the window cannot be recorded: {}", config_.window_graph_launch, why));
      return;
    }
    if (steps->size() > format::kMaxWindowOps) {
      fail(fmt::format("the graph has {} operations, more than the {} of a window", steps->size(), format::kMaxWindowOps));
      return;
    }
    state_ = State::Open;
  }
  const GraphWindowStep& first_step = *std::find_if(steps->begin(), steps->end(), [](const GraphWindowStep& s) { return s.kernel; });
  const GraphKernel& first = *g->nodes[first_step.node].kernel;
  log::info("window: the graph launch {} ({} nodes, {} operations), beginning with {}", config_.window_graph_launch,
            g->nodes.size(), steps->size(), names::demangle(first.mangled));
  // The graph's kernels count as launches in node order (as graph_watch.cpp counts them).
  std::vector<uint64_t> index(g->nodes.size(), 0);
  for (size_t i = 0, k = 0; i < g->nodes.size(); ++i)
    if (g->nodes[i].kernel && g->nodes[i].enabled) index[i] = base + k++;
  if (graph_open_hook_) graph_open_hook_();
  {
    // BEFORE, with the graph's first kernel as the capture's own launch (the manifest's).
    const GraphNodeLaunch launch(first, p->hStream, *cb);
    if (!ends_.begin(TargetLaunch{GraphNodeLaunch::kCbid, &launch.entry, first.mangled, index[first_step.node], -1,
                                  !config_.keep_running})) {
      std::lock_guard lk(mu_);
      state_ = State::Done;
      return;
    }
  }
  const uint64_t now = ops_.gpu_clock_ns();
  std::lock_guard lk(mu_);
  open_ns_ = now;
  for (auto& step : *steps) {
    format::WindowOp op;
    if (step.kernel) {
      const GraphKernel& k = *g->nodes[step.node].kernel;
      const GraphNodeLaunch launch(k, p->hStream, *cb);
      const size_t key = take_key();
      if (!ops_.describe_kernel(GraphNodeLaunch::kCbid, launch.entry, k.mangled, key, &op, &why)) {
        fail(fmt::format("node {} of the graph ({}) cannot be recorded: {}", step.node, names::demangle(k.mangled), why));
        return;
      }
      op.launch_index = index[step.node];
      op.params_key = key;
    } else {
      op = std::move(*step.op);
      if (op.kind == format::WindowOp::Kind::CopyH2D) h2d_bytes_ += op.bytes;
    }
    window_.ops.push_back(std::move(op));
    tags_.push_back({step.kernel ? cb->correlationId : 0, stream_});
  }
  state_ = State::Ending;
  last_correlation_ = cb->correlationId;
  last_thread_ = std::this_thread::get_id();
}

bool WindowRecorder::graph_window_ends(CUpti_CallbackId, const CUpti_CallbackData* cb) {
  if (cb->callbackSite != CUPTI_API_EXIT) return false;
  {
    std::lock_guard lk(mu_);
    if ((!graph_window_ && !end_in_graph_) || state_ != State::Ending || cb->correlationId != last_correlation_ ||
        std::this_thread::get_id() != last_thread_)
      return false;
  }
  ToolScope scope;
  complete(*cb);
  return true;
}

void WindowRecorder::on_graph_in_window(const CUpti_CallbackData* cb) {
  // cuGraphLaunch and cuGraphLaunch_ptsz both take (CUgraphExec, CUstream).
  const auto* p = static_cast<const cuGraphLaunch_ptsz_params*>(cb->functionParams);
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Open) return;
    if (graph_window_) {  // a graph window's operations are its own graph's
      foreign("a CUDA graph launch during the graph launch");
      return;
    }
  }
  // On a capturing stream the graph does not run now (it becomes part of the graph captured).
  if (driver_.stream_is_capturing(p->hStream)) return;
  const std::shared_ptr<const GraphExec> g = graphs_ ? graphs_->launched(p->hGraphExec) : nullptr;
  const std::vector<TrackedRange> live = inventory_.tracker.live();
  std::lock_guard lk(mu_);
  if (state_ != State::Open) return;
  if (p->hStream != stream_) {
    // Not recorded: foreign, unless the window's stream joins that stream (then refused).
    other_stream_op(p->hStream, "a CUDA graph launch on another stream",
                    "it launches a CUDA graph during the window (a graph's nodes are recorded on the window's own "
                    "stream only)");
    return;
  }
  // On the window's stream the graph's work is the window's: recorded whole, or the window is
  // refused (a window without it would replay something else than the application ran).
  const size_t after = window_.ops.empty() ? 0 : window_.ops.size() - 1;  // the first op comes at begin()
  if (!g) {
    fail(fmt::format("the window's stream launches a CUDA graph after its operation {} that kerncap did not see "
                     "instantiated (instantiated before kerncap was loaded, or unreadable): its work cannot be "
                     "recorded, and a window without it is not captured",
                     after));
    return;
  }
  std::string why;
  const auto steps = plan_graph_window(
      *g,
      [&](uint64_t addr, uint64_t bytes) {
        return std::any_of(live.begin(), live.end(),
                           [&](const TrackedRange& r) { return addr >= r.base && addr - r.base + bytes <= r.size; });
      },
      format::kMaxWindowH2DBytes - std::min(h2d_bytes_, format::kMaxWindowH2DBytes), &why, false);
  if (!steps) {
    fail(fmt::format("the window's stream launches a CUDA graph ({} nodes) after its operation {} that cannot be "
                     "recorded as the window's operations: {}",
                     g->nodes.size(), after, why));
    return;
  }
  if (window_.ops.size() + steps->size() > format::kMaxWindowOps) {
    fail(fmt::format("the window has more than {} operations (with a CUDA graph's {})", format::kMaxWindowOps,
                     steps->size()));
    return;
  }
  bool ends = false;
  for (size_t i = 0; i < steps->size(); ++i) {
    const GraphWindowStep& step = (*steps)[i];
    format::WindowOp op;
    if (step.kernel) {
      const GraphKernel& k = *g->nodes[step.node].kernel;
      const GraphNodeLaunch launch(k, p->hStream, *cb);
      const size_t key = take_key();
      if (!ops_.describe_kernel(GraphNodeLaunch::kCbid, launch.entry, k.mangled, key, &op, &why)) {
        fail(fmt::format("node {} ({}) of the CUDA graph launched after the window's operation {} cannot be "
                         "recorded: {}",
                         step.node, names::demangle(k.mangled), after, why));
        return;
      }
      op.launch_index = first_launch_index_ + ++launches_since_;
      op.params_key = key;
      if (is_end(k.mangled)) {
        // A window ends at a launch's exit, and a graph launch's exit is its last node's end.
        if (i + 1 != steps->size()) {
          fail(fmt::format("the window's end ({} match {}) is node {} of the CUDA graph launched after the "
                           "window's operation {}, with {} more operation(s) of that graph after it: a window ends "
                           "with a whole graph launch (end it at the graph's last kernel node, or at a launch after "
                           "the graph)",
                           names::demangle(k.mangled), config_.window_end_dispatch, step.node, after,
                           steps->size() - i - 1));
          return;
        }
        ends = true;
      }
    } else {
      op = std::move(*step.op);
      if (op.kind == format::WindowOp::Kind::CopyH2D) h2d_bytes_ += op.bytes;
    }
    window_.ops.push_back(std::move(op));
    tags_.push_back({step.kernel ? cb->correlationId : 0, stream_});
  }
  graph_correlations_.insert(cb->correlationId);
  log::info("window: a CUDA graph launch on its stream: {} operation(s) of its {} node(s) recorded after operation {}",
            steps->size(), g->nodes.size(), after);
  if (ends) {
    state_ = State::Ending;
    end_in_graph_ = true;
    last_correlation_ = cb->correlationId;
    last_thread_ = std::this_thread::get_id();
    log::info("window: ends with the graph launch's last operation ({})", window_.ops.size() - 1);
  }
}

void WindowRecorder::observe_graph(const CUpti_CallbackData* cb) {
  const auto* p = static_cast<const cuGraphLaunch_ptsz_params*>(cb->functionParams);
  if (driver_.stream_is_capturing(p->hStream)) return;  // it does not run now
  const std::shared_ptr<const GraphExec> g = graphs_ ? graphs_->launched(p->hGraphExec) : nullptr;
  bool over = false;
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Observing || !observer_) return;
    if (!g || !g->stale.empty()) {
      observer_->on_opaque(!g ? "a CUDA graph launch kerncap did not see instantiated"
                              : "a CUDA graph launch kerncap cannot follow (" + g->stale + ")");
      return;
    }
    visit_graph_accesses(*g, GraphAccessVisitor{
                                 [&](const GraphKernel& k) {
                                   if (over) return;  // the horizon was reached inside this graph
                                   ++launches_since_;
                                   over = observer_->on_launch(k.mangled, first_launch_index_ + launches_since_,
                                                               k.params) || over;
                                 },
                                 [&](uint64_t a, uint64_t n, const std::string& w) {
                                   if (!over) observer_->on_read(a, n, w);
                                 },
                                 [&](uint64_t a, uint64_t n, const std::string& w) {
                                   if (!over) observer_->on_write(a, n, w);
                                 },
                                 [&](const std::string& w) {
                                   if (!over) observer_->on_opaque(w);
                                 },
                             });
  }
  if (over) end_observation(true);
}

void WindowRecorder::note_graph_before(const CUpti_CallbackData* cb) {
  const auto* p = static_cast<const cuGraphLaunch_ptsz_params*>(cb->functionParams);
  {
    std::lock_guard lk(mu_);
    if (const auto it = from_in_graph_.find(p->hGraphExec); it != from_in_graph_.end()) {
      from_graph_launches_ += it->second;
      return;
    }
  }
  const std::shared_ptr<const GraphExec> g = graphs_->launched(p->hGraphExec);
  const bool holds = g && graph_has_kernel(*g, [&](const std::string& m) { return from_.matches(m, names::demangle(m)); });
  std::lock_guard lk(mu_);
  if (from_in_graph_.size() < 4096) from_in_graph_[p->hGraphExec] = holds;  // checked once per executable
  from_graph_launches_ += holds;
}

void WindowRecorder::on_memory_op(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  const WindowMemInfo info = window_mem_call(cbid);
  if (info.call == WindowMemCall::None) return;
  format::WindowOp op;
  CUstream stream = nullptr;
  switch (info.call) {
    case WindowMemCall::Memset8:
      op.kind = format::WindowOp::Kind::Memset;
      op.element_size = 1;
      if (info.async) {
        const auto& p = window_params_of<cuMemsetD8Async_params>(cb);
        op.dst = p.dstDevice, op.value = p.uc, op.width = p.N, stream = p.hStream;
      } else {
        const auto& p = window_params_of<cuMemsetD8_v2_params>(cb);
        op.dst = p.dstDevice, op.value = p.uc, op.width = p.N;
      }
      break;
    case WindowMemCall::Memset16:
      op.kind = format::WindowOp::Kind::Memset;
      op.element_size = 2;
      if (info.async) {
        const auto& p = window_params_of<cuMemsetD16Async_params>(cb);
        op.dst = p.dstDevice, op.value = p.us, op.width = p.N, stream = p.hStream;
      } else {
        const auto& p = window_params_of<cuMemsetD16_v2_params>(cb);
        op.dst = p.dstDevice, op.value = p.us, op.width = p.N;
      }
      break;
    case WindowMemCall::Memset32:
      op.kind = format::WindowOp::Kind::Memset;
      op.element_size = 4;
      if (info.async) {
        const auto& p = window_params_of<cuMemsetD32Async_params>(cb);
        op.dst = p.dstDevice, op.value = p.ui, op.width = p.N, stream = p.hStream;
      } else {
        const auto& p = window_params_of<cuMemsetD32_v2_params>(cb);
        op.dst = p.dstDevice, op.value = p.ui, op.width = p.N;
      }
      break;
    case WindowMemCall::CopyD2D:
      op.kind = format::WindowOp::Kind::CopyD2D;
      if (info.async) {
        const auto& p = window_params_of<cuMemcpyDtoDAsync_v2_params>(cb);
        op.dst = p.dstDevice, op.src = p.srcDevice, op.bytes = p.ByteCount, stream = p.hStream;
      } else {
        const auto& p = window_params_of<cuMemcpyDtoD_v2_params>(cb);
        op.dst = p.dstDevice, op.src = p.srcDevice, op.bytes = p.ByteCount;
      }
      break;
    case WindowMemCall::CopyUnified: {
      op.kind = format::WindowOp::Kind::CopyD2D;
      if (info.async) {
        const auto& p = window_params_of<cuMemcpyAsync_params>(cb);
        op.dst = p.dst, op.src = p.src, op.bytes = p.ByteCount, stream = p.hStream;
      } else {
        const auto& p = window_params_of<cuMemcpy_params>(cb);
        op.dst = p.dst, op.src = p.src, op.bytes = p.ByteCount;
      }
      // Only a copy between tracked allocations is device-to-device; one that reads the host
      // writes bytes no replay has, and one that writes the host changes nothing on the device.
      bool dst_tracked = false, src_tracked = false;
      for (const auto& r : inventory_.tracker.live()) {
        dst_tracked |= op.dst >= r.base && op.dst - r.base + op.bytes <= r.size;
        src_tracked |= op.src >= r.base && op.src - r.base + op.bytes <= r.size;
      }
      if (!dst_tracked) return;
      if (!src_tracked) {
        std::lock_guard lk(mu_);
        if (state_ == State::Open) foreign(fmt::format("a copy of {} bytes from outside the tracked memory", op.bytes));
        return;
      }
      break;
    }
    case WindowMemCall::Alloc: {
      std::lock_guard lk(mu_);
      if (state_ == State::Open)
        foreign("an allocation inside the window (memory that did not exist at its start is not in BEFORE)");
      return;
    }
    case WindowMemCall::CopyH2D: {
      // The host bytes are copied now, at the call's entry: what the application asked to copy
      // (an asynchronous copy's source may change after the call; the application would race too).
      op.kind = format::WindowOp::Kind::CopyH2D;
      const void* host = nullptr;
      if (info.async) {
        const auto& p = window_params_of<cuMemcpyHtoDAsync_v2_params>(cb);
        op.dst = p.dstDevice, host = p.srcHost, op.bytes = p.ByteCount, stream = p.hStream;
      } else {
        const auto& p = window_params_of<cuMemcpyHtoD_v2_params>(cb);
        op.dst = p.dstDevice, host = p.srcHost, op.bytes = p.ByteCount;
      }
      op.src = reinterpret_cast<uint64_t>(host);
      if (info.async && driver_.stream_is_capturing(stream)) return;  // recorded into a graph: it does not run now
      bool dst_tracked = false;
      for (const auto& r : inventory_.tracker.live())
        dst_tracked |= op.dst >= r.base && op.dst - r.base + op.bytes <= r.size;
      std::lock_guard lk(mu_);
      if (state_ != State::Open || graph_window_) break;  // foreign below, or not the window's
      if (!dst_tracked || !host || h2d_bytes_ + op.bytes > format::kMaxWindowH2DBytes) {
        foreign(!dst_tracked || !host
                    ? std::string("a host-to-device copy into untracked memory")
                    : fmt::format("a host-to-device copy beyond the {} of host bytes a window keeps",
                                  format::kMaxWindowH2DBytes));
        return;
      }
      h2d_bytes_ += op.bytes;
      const auto* b = static_cast<const uint8_t*>(host);
      op.host_bytes = std::make_shared<const std::vector<uint8_t>>(b, b + op.bytes);
      break;
    }
    case WindowMemCall::CopyD2H:
    case WindowMemCall::None: return;
  }
  if (info.async && driver_.stream_is_capturing(stream)) return;  // recorded into a graph: it does not run now
  std::lock_guard lk(mu_);
  if (state_ != State::Open) return;
  if (graph_window_) {
    foreign(fmt::format("a {} made during the graph launch", to_string(op.kind)));
    return;
  }
  if (window_.ops.size() >= format::kMaxWindowOps) {
    fail(fmt::format("the window has more than {} operations", format::kMaxWindowOps));
    return;
  }
  // A synchronous memset or copy is ordered with the legacy stream: the window's own. An
  // asynchronous one on another stream is the window's if that stream is joined (assemble).
  const CUstream on = info.async ? stream : stream_;
  if (on != stream_ && cb->context != context_) {
    other_stream_op(on, fmt::format("a {} on another stream", to_string(op.kind)), kOtherContext);
    return;
  }
  window_.ops.push_back(op);
  tags_.push_back({0, on});
  if (on != stream_) other_stream_op(on, fmt::format("a {} on another stream", to_string(op.kind)));
}

void WindowRecorder::foreign(const std::string& what) { window_add_foreign(window_, what); }

void WindowRecorder::on_kernel_record(uint32_t correlation, const char* name, uint64_t start_ns, uint64_t end_ns) {
  if (end_ns < start_ns || !name) return;
  std::lock_guard lk(mu_);
  if (state_ == State::Waiting || start_ns < open_ns_ || records_.size() >= kMaxRecords) return;
  records_.push_back({correlation, name, start_ns, end_ns});
}

void WindowRecorder::fill_in_app(format::Window& w, const std::vector<uint32_t>& corr) const {
  std::vector<const Record*> by_op(w.ops.size(), nullptr);
  std::vector<bool> used(records_.size());
  std::vector<size_t> order(records_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return records_[a].start < records_[b].start; });
  size_t kernels = 0, timed = 0;
  for (size_t i = 0; i < w.ops.size() && i < corr.size(); ++i) {
    if (w.ops[i].kind != format::WindowOp::Kind::Kernel) continue;
    ++kernels;
    for (size_t r = 0; r < records_.size(); ++r)
      // A graph's kernels share the graph launch's correlation id: each takes a record of its own kernel.
      if (!used[r] && corr[i] && records_[r].correlation == corr[i] &&
          ((!graph_window_ && !graph_correlations_.count(corr[i])) || records_[r].name == w.ops[i].mangled)) {
        used[r] = true;
        by_op[i] = &records_[r];
        break;
      }
  }
  // The rest by name, in launch order on each stream: each takes the earliest unused record of
  // its kernel that began after the previous kernel's of its stream.
  std::map<uint32_t, uint64_t> after;
  for (size_t i = 0; i < w.ops.size(); ++i) {
    if (w.ops[i].kind != format::WindowOp::Kind::Kernel) continue;
    uint64_t& since = after[w.ops[i].stream];
    if (by_op[i]) {
      since = by_op[i]->start;
      continue;
    }
    for (size_t r : order)
      if (!used[r] && records_[r].start >= since && records_[r].name == w.ops[i].mangled) {
        used[r] = true;
        by_op[i] = &records_[r];
        since = records_[r].start;
        break;
      }
  }
  uint64_t first = UINT64_MAX, last = 0, sum = 0;
  for (size_t i = 0; i < w.ops.size(); ++i) {
    if (!by_op[i]) continue;
    ++timed;
    first = std::min(first, by_op[i]->start);
    last = std::max(last, by_op[i]->end);
    sum += by_op[i]->end - by_op[i]->start;
    w.ops[i].in_app_ns = by_op[i]->end - by_op[i]->start;
  }
  for (size_t i = 0; i < w.ops.size(); ++i)
    if (by_op[i]) w.ops[i].in_app_start_ns = by_op[i]->start - first;
  if (kernels && timed == kernels) {
    w.in_app_window_ns = last - first;
    w.in_app_kernels_ns = sum;
  } else if (kernels) {
    log::info("window: in-app times for {} of its {} kernel launches (CUPTI records); no window time", timed, kernels);
  }
}

void WindowRecorder::complete(const CUpti_CallbackData& last_exit) {
  uint32_t first = 0;
  {
    std::lock_guard lk(mu_);
    if (state_ != State::Ending) return;
    state_ = State::Done;
    first = first_correlation_;
  }
  // The window's in-app times are read after the capture's synchronise and flush, inside
  // finish: the recorder hands over a function, not the window as it is now.
  const auto changed = ends_.finish(first, last_exit, [this] {
    std::lock_guard lk(mu_);
    std::vector<uint32_t> corr;
    format::Window w = assemble(&corr);
    fill_in_app(w, corr);
    return w;
  });
  if (!changed || config_.window_observe == 0) return;
  std::lock_guard lk(mu_);
  if (state_ != State::Done) return;
  observer_ = std::make_unique<LiveOutObserver>(*changed, config_.window_observe);
  state_ = State::Observing;
  log::info("window: watching the next {} launch(es) for reads of the {} region(s) it changed (--live-out auto)",
            config_.window_observe, changed->size());
}

void WindowRecorder::fail(const std::string& why) {
  state_ = State::Done;
  log::warn("window: {}", why);
  ends_.abandon(first_correlation_, why);
}

void WindowRecorder::end_now(CUcontext context, const std::string& why) {
  {
    std::lock_guard lk(mu_);
    if (!why.empty()) {
      if (state_ == State::Waiting || state_ == State::Open) fail(why);
      return;
    }
    if (state_ != State::Open) return;
    state_ = State::Ending;
  }
  // The capture finishes as at the last launch's exit: the first launch's pending capture, in
  // its context (no launch result to check: the range's pop is no launch).
  CUpti_CallbackData exit{};
  exit.context = context;
  complete(exit);
}

void WindowRecorder::at_exit() {
  if (state_.load() == State::Observing) {
    end_observation(false);
    return;
  }
  std::lock_guard lk(mu_);
  if (!config_.window_range.empty()) {  // the range's own messages are window_nvtx.cpp's
    if (state_ == State::Open)
      fail(fmt::format("the application ended inside the NVTX range '{}' (push {} from 0), before its pop: {} "
                       "operation(s) recorded",
                       config_.window_range, config_.window_range_occurrence, window_.ops.size()));
    return;
  }
  if (config_.window_graph && state_ == State::Waiting) {
    const std::string what = config_.window_graph_kernel.empty()
                                 ? std::string("graph launches")
                                 : fmt::format("launches of graphs holding a kernel matching '{}'", config_.window_graph_kernel);
    fail(fmt::format("the application made {} {} kerncap could follow, and the window is launch {} (from 0){}", graph_matches_,
                     what, config_.window_graph_launch,
                     graph_unseen_ ? "; it also launched CUDA graphs kerncap did not see instantiated (instantiated "
                                     "before kerncap was loaded, or unreadable)"
                                   : ""));
    return;
  }
  if (state_ == State::Waiting && from_graph_launches_)
    log::warn("window: '{}' matched kernel nodes of {} CUDA graph launch(es), which a FROM..TO window does not begin "
              "inside (its first launch is an eager one): for a window of one graph launch use `kerncap window "
              "extract --graph '{}@N'`; to take the graph inside a window, begin it at an eager launch before the graph",
              config_.kernel, from_graph_launches_, config_.kernel);
  if (state_ != State::Open && state_ != State::Ending) return;
  fail(fmt::format("the application ended before the window's end: {} operation(s) recorded from {}, and '{}' "
                   "matched {} time(s) of the {} needed (is the end's launch on the first launch's stream?)",
                   window_.ops.size(), window_.from, window_.to, end_matches_, config_.window_end_dispatch + 1));
}

}  // namespace kerncap::capture
