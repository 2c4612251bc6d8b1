#pragma once
// Capture mode's window of launches (`kerncap window extract`, docs/window.md): the watcher
// finds the window's first launch as an ordinary target (KERNCAP_KERNEL, KERNCAP_DISPATCH)
// and hands it to this recorder instead of the capturer. The recorder has the capturer take
// BEFORE there (every tracked region: --closure all), then records every operation the
// application issues on that launch's stream — kernel launches (image, parameters, geometry,
// attributes), memsets, device-to-device copies and host-to-device copies (their host bytes
// kept) — until the Nth launch whose name matches the window's end (KERNCAP_WINDOW); at that
// launch's exit the capturer takes AFTER (every byte the window changed) and publishes, with
// the window's operations beside (format/window.hpp). Work issued meanwhile on other streams is
// recorded too, tagged with its stream, with the event records and waits between streams: the
// streams the window's stream joins (transitively) through events during the window are part of
// it (ops of stream index > 0, event_record / event_wait ops); the others' work is foreign,
// counted and named (validate says so). A joined stream whose work cannot be recorded (a graph
// launch, a launch that cannot be described) refuses the window. After it, the
// live-out observation (window_liveout.hpp) watches the application's next launches.
//
// No CUDA call is made here: what a launch is comes through WindowOps and the work at the
// window's ends through WindowEnds, so unit tests drive this with fake callbacks
// (tests/unit/capture_window_test.cpp). Neither method throws into CUPTI.
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "capture/config.hpp"
#include "capture/graph_tracker.hpp"
#include "capture/inventory.hpp"
#include "capture/seams.hpp"
#include "capture/window_liveout.hpp"
#include "format/window.hpp"
#include "names/match.hpp"

namespace kerncap::capture {

// The driver's part: a kernel launch, at its API entry, as a window operation (geometry,
// attributes, parameter layout, the image's kind and hash); its parameter bytes and its
// image's bytes are kept by the implementation for write(). False with `why` when the
// launch cannot be described (the window is then abandoned: never a window that replays
// something else than the application ran).
class WindowOps {
 public:
  virtual ~WindowOps() = default;
  virtual bool describe_kernel(CUpti_CallbackId cbid, const CUpti_CallbackData& cb, const std::string& mangled,
                               size_t index, format::WindowOp* op, std::string* why) = 0;
  // CUPTI's clock now (the kernel records' time base); 0 when unknown.
  virtual uint64_t gpu_clock_ns() { return 0; }
  // A later launch's parameter bytes, for the live-out observation after the window (the
  // words that may point into the window's regions); false when they cannot be read.
  virtual bool launch_params(CUpti_CallbackId, const CUpti_CallbackData&, std::vector<uint8_t>*) { return false; }
};

// The capture's part: BEFORE at the window's first launch, AFTER and the publication at the
// end of its last one.
class WindowEnds {
 public:
  virtual ~WindowEnds() = default;
  // At the first launch's entry (TargetCapture::begin); false: abandoned and reported.
  virtual bool begin(const TargetLaunch& first) = 0;
  // At the last launch's exit: `first` is the first launch's correlation id (its capture is
  // pending since begin), `last_exit` the last launch's exit callback. `window` gives the
  // window as recorded, with the in-app times of the kernel records delivered so far: call it
  // after the capture's synchronise and flush.
  // Returns the regions the window changed when the capture was published (the live-out
  // observation watches them), nullopt when it was not.
  virtual std::optional<std::vector<WindowChanged>> finish(uint32_t first, const CUpti_CallbackData& last_exit,
                                                           const std::function<format::Window()>& window) = 0;
  // The window cannot be completed (a launch that cannot be described, the application
  // ending first): the pending capture is dropped and `why` reported.
  virtual void abandon(uint32_t first, const std::string& why) = 0;
  // The live-out observation is over (window_liveout.json is written beside the published
  // capture): `horizon` when it saw its N launches (the application may be stopped now, as a
  // capture without observation stops it at the window's end), false at the application's exit.
  virtual void observed(const format::WindowLiveOut& result, bool horizon) = 0;
};

class WindowRecorder final : public TargetCapture {
 public:
  WindowRecorder(const Config& config, Inventory& inventory, LaunchQueries& driver, WindowOps& ops, WindowEnds& ends);

  // The watcher's target: the window's first launch (entry) and its exit.
  bool begin(const TargetLaunch& first) override;
  void finish(const CUpti_CallbackData& exit) override;
  // Every CUPTI callback, before the watcher sees it: the window's later operations.
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  // The driver-API callbacks the window needs beyond the watcher's (memsets, copies).
  static std::vector<CUpti_CallbackId> callback_ids();
  // A kernel record (CUPTI activity): its correlation id, name, GPU start and end. Records are
  // matched to the window's launches by correlation id, else (a runtime launch's record may
  // carry the runtime call's id) by name in launch order among those that began after the
  // window opened.
  void on_kernel_record(uint32_t correlation, const char* name, uint64_t start_ns, uint64_t end_ns);
  // The application is ending: a window begun and not ended is reported (never published).
  void at_exit();
  // A window the host bounds (an NVTX range, Config::window_range: window_nvtx.hpp, which calls
  // begin() at the range's first launch) ends now: with `why` empty an open window is completed
  // (AFTER and the publication, `context` current for the capture); otherwise the window, begun
  // or not, is abandoned and `why` reported. Never ended by a launch's name (is_end).
  void end_now(CUcontext context, const std::string& why);
  // The executables `graphs` tracks (the caller feeds it the graph callbacks). A window of one
  // graph launch (Config::window_graph) is found among them: its kernels' launch indices are
  // counted from the graph launch's first kernel (0), in node order. In a FROM..TO window, a
  // graph launched on the window's stream becomes its nodes' operations in the same order (or
  // refuses the window), and a graph launched after the window is looked into by the live-out
  // observation. Without this call a graph launch inside a window refuses it.
  // `on_open` (optional) runs when the graph launch is found, before BEFORE: kernel records on.
  void watch_graphs(GraphTracker& graphs, void (*on_open)() = nullptr) {
    graphs_ = &graphs;
    graph_open_hook_ = on_open;
  }

  // Observing: the window is published and the application's next launches are watched for
  // reads of the regions it changed (window_liveout.hpp), until Config::window_observe of them.
  enum class State { Waiting, Open, Ending, Observing, Done };
  State state() const;
  // What the window holds so far (tests).
  format::Window window() const;

 private:
  void on_launch_entry(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  // Graph window: a cuGraphLaunch's entry before the window (the Nth matching launch opens it,
  // with every node recorded at once: window_graph.hpp) and the window's own launch's exit.
  void on_graph_launch_entry(const CUpti_CallbackData* cb);
  bool graph_window_ends(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  // FROM..TO window: a graph launch's entry while the window is open. On the window's stream
  // its nodes are appended as operations (window_graph.hpp, as a graph window records them);
  // what cannot be recorded refuses the window, never a window without the graph's work.
  void on_graph_in_window(const CUpti_CallbackData* cb);
  // After the window: a graph launch's nodes as the observation's launches, reads and writes.
  void observe_graph(const CUpti_CallbackData* cb);
  // Before a FROM..TO window: a graph launch holding a kernel node FROM matches (a FROM..TO
  // window begins at an eager launch only; said at exit when the window never began).
  void note_graph_before(const CUpti_CallbackData* cb);
  void on_memory_op(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  // Event records and waits during the window: recorded as operations; a joined stream waiting
  // on an event another stream recorded during the window joins that stream (docs/window.md).
  void on_event_call(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  // `stream` and every stream it waited on during the window become part of it (mu_ held);
  // false (and the window refused) when one of them did something a window cannot replay.
  bool join(CUstream stream);
  size_t take_key();  // the describe index of the next kernel (mu_ held)
  // An operation of another stream than the window's (mu_ held): counted for that stream, and
  // refuses the window at once when that stream is joined and `refuse` says why it cannot be recorded.
  void other_stream_op(CUstream stream, const std::string& what, const std::string& refuse = {});
  // The window as it stands: the ops of joined streams with their stream and event indices, the
  // others' counted as foreign; `corr` gets the kept ops' correlation ids (mu_ held).
  format::Window assemble(std::vector<uint32_t>* corr) const;
  // After the window: a launch or memory operation seen by the live-out observation.
  void observe_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void observe_memory(CUpti_CallbackId cbid, const CUpti_CallbackData* cb);
  void end_observation(bool horizon);  // mu_ not held
  void complete(const CUpti_CallbackData& last_exit);  // mu_ not held
  void fail(const std::string& why);                   // mu_ held
  void foreign(const std::string& what);               // mu_ held
  // Whether `name` ends the window: counts the end pattern's matches (mu_ held).
  bool is_end(const std::string& mangled);
  // In-app times from the kernel records, into the window; `corr`: its ops' correlation ids (mu_ held).
  void fill_in_app(format::Window& w, const std::vector<uint32_t>& corr) const;

  const Config& config_;
  Inventory& inventory_;
  LaunchQueries& driver_;
  WindowOps& ops_;
  WindowEnds& ends_;
  names::Matcher end_;
  mutable std::mutex mu_;
  std::atomic<State> state_{State::Waiting};  // read without the lock on every callback, written under it
  format::Window window_;
  CUstream stream_ = nullptr;
  CUcontext context_ = nullptr;  // the window's first launch's (another context's streams never join)
  uint32_t first_correlation_ = 0;
  uint32_t last_correlation_ = 0;
  std::thread::id last_thread_;
  uint64_t end_matches_ = 0;
  uint64_t first_launch_index_ = 0;  // the first launch's index among the process's launches
  uint64_t launches_since_ = 0;      // launches (any stream) since it
  // Per recorded op (window_.ops, every stream's during the window): its correlation id (0 for
  // memsets, copies and events), stream, event (event ops) and, for a wait, the stream that
  // recorded the event last before it.
  struct Tag {
    uint32_t correlation = 0;
    CUstream stream = nullptr;
    CUevent event = nullptr;
    CUstream source = nullptr;
  };
  std::vector<Tag> tags_;
  size_t next_key_ = 1;  // the describe index of the next kernel (0: the first launch's)
  struct Record {
    uint32_t correlation = 0;
    std::string name;
    uint64_t start = 0, end = 0;
  };
  std::vector<Record> records_;  // those that began after open_ns_, at most kMaxRecords
  // Other streams during the window: operations issued on each (counted, one example) and why
  // the stream's work cannot be part of the window, if it cannot (refused when it is joined).
  struct OtherStream {
    uint64_t ops = 0, unrecorded = 0;  // unrecorded: not in window_.ops (foreign unless refused)
    std::string example, unrecorded_example, refuse;
  };
  std::map<CUstream, OtherStream> other_streams_;
  std::set<CUstream> joined_;              // the window's stream and those it joined
  std::map<CUevent, CUstream> last_record_;  // events recorded during the window: the stream of the last record
  std::unique_ptr<LiveOutObserver> observer_;
  GraphTracker* graphs_ = nullptr;
  void (*graph_open_hook_)() = nullptr;
  names::Matcher graph_kernel_;
  uint64_t graph_matches_ = 0;   // graph launches counted (their graph holds a matching kernel)
  bool graph_window_ = false;    // the window is a graph launch: its kernels share one correlation id
  bool graph_unseen_ = false;    // a graph launch of an executable the tracker never saw
  bool end_in_graph_ = false;    // a FROM..TO window ends with a graph launch's last kernel
  std::set<uint32_t> graph_correlations_;  // graph launches inside a FROM..TO window (records by name)
  names::Matcher from_;          // FROM (config.kernel), for graph launches before the window
  std::map<CUgraphExec, bool> from_in_graph_;  // executables checked: whether a node matches FROM
  uint64_t from_graph_launches_ = 0;           // launches of those that do, before the window
  uint64_t h2d_bytes_ = 0;  // host bytes of the window's host-to-device copies, kept
  uint64_t open_ns_ = 0;
  static constexpr size_t kMaxRecords = 1 << 20;
};

}  // namespace kerncap::capture
