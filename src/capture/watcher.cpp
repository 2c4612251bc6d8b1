#include "capture/watcher.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "capture/events.hpp"
#include "capture/in_app.hpp"
#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "common/log.hpp"
#include "format/out_layout.hpp"
#include "names/demangle.hpp"

namespace kerncap::capture {
namespace {

std::atomic<int> g_ignore_depth{0};

bool is_module_load(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData || cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary;
}

// With lazy loading (the default) the driver hands an image over at the module's first use,
// not inside its load call: the cuModuleGetFunction that follows the load (Triton's loader
// makes one at once) names the module, so an image handed over inside it is bound to it.
bool is_function_lookup(CUpti_CallbackId cbid) { return cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction; }

bool is_unload(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleUnload || cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload;
}

bool is_graph_launch(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

}  // namespace

int ignore_depth() { return g_ignore_depth.load(); }
void ignore_begin() { ++g_ignore_depth; }
void ignore_end() {
  int v = g_ignore_depth.load();
  while (v > 0 && !g_ignore_depth.compare_exchange_weak(v, v - 1)) {
  }
}

LaunchWatcher::LaunchWatcher(const Config& config, Inventory& inventory, LaunchQueries& driver,
                             TargetCapture& target)
    : config_(config), inventory_(inventory), driver_(driver), target_(target),
      targets_(format::effective_targets(config)), multi_(!config.targets.empty()), slots_(targets_.size()) {
  done_ = targets_.empty();
}

std::vector<CUpti_CallbackId> LaunchWatcher::driver_callback_ids() {
  std::vector<CUpti_CallbackId> ids = Tracker::callback_ids();
  for (auto id : TextureTracker::callback_ids()) ids.push_back(id);
  for (auto id : launch_callback_ids()) ids.push_back(id);
  for (auto id : stream_capture_callback_ids()) ids.push_back(id);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
  for (auto id : GraphTracker::callback_ids()) ids.push_back(id);
  return ids;
}

uint64_t LaunchWatcher::launches() const { return launches_.load(std::memory_order_relaxed); }

void LaunchWatcher::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // Module loads are taken even while kerncap itself is calling the driver: with lazy
  // loading, our own queries at the target launch are what loads its module.
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      ToolScope scope;
      const auto* rd = static_cast<const CUpti_ResourceData*>(data);
      const auto* mod = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
      if (mod) image_loaded_on_this_thread() = inventory_.images.on_module_loaded(mod->pCubin, mod->cubinSize);
    }
    return;
  }
  if (t_in_tool) return;
  ToolScope scope;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  // Launches first: they are nearly every callback, and none of the trackers below takes one.
  if (is_launch_cbid(cbid)) {
    on_launch(cbid, cb);
    return;
  }
  if (follow_stream_capture(cbid, cb, captures_)) return;
  if (is_module_load(cbid) || is_function_lookup(cbid)) {
    const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
    uint64_t& loaded = image_loaded_on_this_thread();
    if (cb->callbackSite == CUPTI_API_ENTER) {
      loaded = 0;
    } else if (rv && *rv == CUDA_SUCCESS && loaded) {
      // All three load parameter structs start with `CUmodule* module`.
      const void* module = nullptr;
      if (is_function_lookup(cbid)) module = static_cast<const cuModuleGetFunction_params*>(cb->functionParams)->hmod;
      else if (const auto* p = static_cast<const cuModuleLoadData_params*>(cb->functionParams); p->module)
        module = *p->module;
      inventory_.images.bind_module(module, loaded);
    }
    return;
  }
  if (is_unload(cbid)) {
    if (cb->callbackSite == CUPTI_API_EXIT) {
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleUnload)
        inventory_.images.unbind_module(static_cast<const cuModuleUnload_params*>(cb->functionParams)->hmod);
      std::lock_guard lk(mu_);
      clear_skips();
    }
    return;
  }
  if (inventory_.tracker.on_driver_api(cbid, cb)) return;
  if (inventory_.textures.on_driver_api(cbid, cb)) return;
  if (graphs_ && !done_ && graphs_->on_driver_api(cbid, cb)) return;
  if (is_graph_launch(cbid) && graphs_) {
    on_graph_launch(cb);
    return;
  }
  if (is_graph_launch(cbid)) {
    std::lock_guard lk(mu_);
    if (!graph_note_ && !done_) {
      graph_note_ = true;
      emit(format::events::graph_launch());
    }
    return;
  }
}

void LaunchWatcher::on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  uint64_t& loaded = image_loaded_on_this_thread();
  if (cb->callbackSite == CUPTI_API_ENTER) {
    loaded = 0;
  } else if (loaded) {
    // The launch was its module's first use (lazy loading, e.g. a runtime launch of a
    // CUkernel): the image the driver handed over during it is that module's.
    bind_loaded_image(cbid, cb, std::exchange(loaded, 0));
  }
  if (cb->callbackSite == CUPTI_API_EXIT) {
    // A launch owes its exit work only when its entry began a capture (rare): no lock otherwise.
    if (pending_count_.load(std::memory_order_acquire) == 0) return;
    std::optional<Pending> p;
    {
      std::lock_guard lk(mu_);
      for (auto it = pending_.begin(); it != pending_.end(); ++it)
        if (it->correlation == cb->correlationId && it->thread == std::this_thread::get_id()) {
          p = *it;
          pending_.erase(it);
          pending_count_.fetch_sub(1, std::memory_order_relaxed);
          break;
        }
    }
    if (p) {
      EventTargetScope scope(event_target(p->target));
      target_.finish(*cb);
    }
    return;
  }
  if (done_) return;
  LaunchArgs args;
  if (!decode_launch(cbid, cb->functionParams, &args)) return;
  if (known_skip(args.f, cb->context)) return;
  // CUPTI's name is viewed, not copied: a matching kernel's launches allocate nothing here.
  std::string asked;
  std::string_view mangled = cb->symbolName ? std::string_view(cb->symbolName) : std::string_view();
  if (mangled.empty()) mangled = asked = driver_.kernel_name(args.f);
  if (mangled.empty()) return;
  if (!on_chosen_device(mangled, cb->context)) {
    remember_skip(args.f, cb->context);
    return;
  }
  uint64_t launch_index = 0;
  bool matches = false;
  const int t = is_target(mangled, args.stream, &launch_index, true, &matches);
  if (t < 0) {
    if (!matches) remember_skip(args.f, cb->context);
    return;
  }
  // The last target stops the application after its capture (without --continue).
  const bool stop_after = !config_.keep_running && done_;
  EventTargetScope scope(event_target(t));
  // With lazy loading the target's module may not be loaded yet: asking for it loads it now,
  // and the image handed over meanwhile is that module's (the capture then finds it bound).
  loaded = 0;
  if (const void* module = driver_.module_of(args.f); module && loaded)
    inventory_.images.bind_module(module, loaded, false);
  const bool begun = target_.begin(TargetLaunch{cbid, cb, std::string(mangled), launch_index, event_target(t), stop_after});
  // What the capture itself loads (kerncap's own scan module) is not the launched module's.
  loaded = 0;
  if (!begun) return;
  std::lock_guard lk(mu_);
  pending_.push_back(Pending{cb->correlationId, std::this_thread::get_id(), t});
  pending_count_.fetch_add(1, std::memory_order_release);
}

// A thread's last skipped handle, valid while the skip set it came from is unchanged: an
// application's loop launches one kernel many times in a row, and this answers it without the
// lock. `epoch` is unique across watchers and across clears of their sets.
namespace {
struct LastSkip {
  const void* f = nullptr;
  const void* ctx = nullptr;
  uint64_t epoch = 0;
};
thread_local LastSkip t_last_skip;
std::atomic<uint64_t> g_skip_epochs{0};
}  // namespace

uint64_t LaunchWatcher::new_skip_epoch() { return g_skip_epochs.fetch_add(1, std::memory_order_relaxed) + 1; }

void LaunchWatcher::clear_skips() {
  skip_handles_.clear();
  skip_epoch_.store(new_skip_epoch(), std::memory_order_release);
}

void LaunchWatcher::bind_loaded_image(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, uint64_t hash) {
  LaunchArgs args;
  if (!decode_launch(cbid, cb->functionParams, &args) || !args.f) return;
  if (const void* module = driver_.module_of(args.f)) inventory_.images.bind_module(module, hash, false);
}

bool LaunchWatcher::known_skip(CUfunction f, CUcontext ctx) {
  if (!f) return false;  // nothing to key on (a fake launch in a test)
  const LastSkip& last = t_last_skip;
  if (last.f == f && last.ctx == ctx && last.epoch == skip_epoch_.load(std::memory_order_acquire)) {
    launches_.fetch_add(1, std::memory_order_relaxed);  // still a launch: launch_index counts every one
    return true;
  }
  std::lock_guard lk(mu_);
  if (!skip_handles_.count({f, ctx})) return false;
  launches_.fetch_add(1, std::memory_order_relaxed);
  t_last_skip = LastSkip{f, ctx, skip_epoch_.load(std::memory_order_relaxed)};
  return true;
}

void LaunchWatcher::remember_skip(CUfunction f, CUcontext ctx) {
  if (!f) return;
  std::lock_guard lk(mu_);
  if (skip_handles_.size() >= 65536) clear_skips();  // bounded; a miss only costs the slow path
  skip_handles_.insert({f, ctx});
}

const std::vector<int>& LaunchWatcher::matching(std::string_view mangled) {
  auto it = name_matches_.find(mangled);
  if (it != name_matches_.end()) return it->second;
  const std::string dem = names::demangle(mangled);
  const std::string name(mangled);
  std::vector<int> m = naming(name, dem);
  nlohmann::json line = format::events::seen(name, dem, !m.empty());
  if (multi_) format::events::add_targets(line, m);
  emit(std::move(line));
  return name_matches_.emplace(name, std::move(m)).first->second;
}

std::vector<int> LaunchWatcher::naming(const std::string& mangled, const std::string& demangled) const {
  std::vector<int> m;
  for (size_t i = 0; i < inventory_.matchers.size(); ++i)
    if (inventory_.matchers[i].matches(mangled, demangled)) m.push_back(static_cast<int>(i));
  return m;
}

std::vector<int> LaunchWatcher::waiting(const std::vector<int>& targets) const {
  std::vector<int> out;
  waiting(targets, &out);
  return out;
}

void LaunchWatcher::waiting(const std::vector<int>& targets, std::vector<int>* out) const {
  out->clear();
  for (int t : targets)
    if (!slots_[t].done) out->push_back(t);
}

bool LaunchWatcher::all_done() const {
  for (const auto& s : slots_)
    if (!s.done) return false;
  return true;
}

int LaunchWatcher::is_target(std::string_view mangled, CUstream stream, uint64_t* launch_index, bool check_stream,
                             bool* name_matches) {
  std::lock_guard lk(mu_);
  *launch_index = launches_.fetch_add(1, std::memory_order_relaxed);
  const std::vector<int>& named = matching(mangled);
  if (name_matches) *name_matches = !named.empty();
  waiting(named, &live_);
  const std::vector<int>& live = live_;
  if (live.empty()) return -1;
  // The driver is asked about the stream only while some capture is open.
  if (check_stream && captures_.any() && driver_.stream_is_capturing(stream)) {
    // Recorded into a graph: it counts when the graph runs (graph_watch.cpp).
    log::debug("not counting a launch of {}: its stream is being captured into a CUDA graph, so the kernel "
               "runs when the graph is launched",
               names::demangle(mangled));
    nlohmann::json line = format::events::skipped(std::string(mangled), format::events::SkipReason::CapturingStream);
    if (multi_) format::events::add_targets(line, live);
    emit(std::move(line));
    return -1;
  }
  if (ignore_depth() > 0) {
    // An autotuner is benchmarking configurations (the Triton shim says so): these launches
    // are not the application's, so they are not counted.
    if (const std::string name(mangled); ignored_names_.insert(name).second)
      emit(format::events::ignored(name, "autotuner benchmark"));
    return -1;
  }
  int chosen = -1;
  for (int t : live) {
    Slot& slot = slots_[t];
    const uint64_t index = slot.matched++;
    if (!window_open_ && index >= in_app_window_start(targets_[t].dispatch)) {
      window_open_ = true;  // this launch is made after the hook: its own record is kept
      if (window_hook_) window_hook_();
    }
    // A "match" event is a write(2): one per launch would cost a frequently launched kernel
    // more than its launch. The first few, powers of two, the target, and the last one at exit
    // (report_matches) tell the launcher what it needs (how far the count got).
    const uint64_t want = targets_[t].dispatch;
    if (index <= want && (index < 16 || (index & (index - 1)) == 0 || index == want)) {
      nlohmann::json line = format::events::match(index, std::string(mangled));
      if (multi_) format::events::add_target(line, t);
      emit(std::move(line));
      slot.last_emitted = index;
    } else if (index <= want) {
      slot.last_name.assign(mangled);  // reuses the string's storage
    }
    if (index != targets_[t].dispatch) continue;
    slot.done = true;
    if (chosen >= 0) {
      // Two patterns name this one launch: it is captured once, for the first of them.
      const std::string why = "its launch (" + names::demangle(mangled) + ", launch " + std::to_string(*launch_index) +
                              " of the process) is also target " + std::to_string(chosen) +
                              "'s, which took it; give this target another --dispatch";
      log::warn("target {}: {}", t, why);
      nlohmann::json line = format::events::error(why);
      format::events::add_target(line, t);
      emit(std::move(line));
      continue;
    }
    if (!claim(t)) continue;  // another process of this application took this target
    chosen = t;
  }
  done_ = all_done();
  return chosen;
}
bool LaunchWatcher::on_chosen_device(std::string_view mangled, CUcontext ctx) {
  if (config_.device < 0) return true;
  const int dev = driver_.device_of(ctx);
  if (dev == config_.device) return true;
  std::lock_guard lk(mu_);
  launches_.fetch_add(1, std::memory_order_relaxed);  // still a launch: launch_index counts every one
  if (const std::string name(mangled); other_device_names_.insert(name).second)
    emit(format::events::ignored(name, dev < 0 ? std::string("on an unknown CUDA device (--device)")
                                                  : "on CUDA device " + std::to_string(dev) + ", not --device " +
                                                        std::to_string(config_.device)));
  return false;
}

bool LaunchWatcher::claim(size_t target) {
  // One capture per target, even when several processes of the application use CUDA:
  // the first to create the file takes it (O_EXCL is atomic across processes).
  std::string path = format::out::claim_file(targets_[target].output).string();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::string pid = std::to_string(::getpid());
  ssize_t n = ::write(fd, pid.data(), pid.size());
  (void)n;  // the file's existence is the claim; its content is for people
  ::close(fd);
  return true;
}

void LaunchWatcher::report_unlaunched_kernels() {
  // With --device, names launched on other devices never reached matching(): they would
  // read as unlaunched.
  if (done_ || config_.device >= 0) return;
  const std::vector<std::string> kernels = inventory_.images.matching_kernels(4096);
  std::lock_guard lk(mu_);
  size_t reported = 0;
  for (const std::string& mangled : kernels) {
    if (reported >= format::events::kMaxUnlaunched) break;
    if (name_matches_.find(std::string_view(mangled)) != name_matches_.end()) continue;  // launched
    const std::string dem = names::demangle(mangled);
    const std::vector<int> live = waiting(naming(mangled, dem));
    if (live.empty()) continue;
    nlohmann::json line = format::events::unlaunched(mangled, dem);
    if (multi_) format::events::add_targets(line, live);
    emit(std::move(line));
    ++reported;
  }
}

void LaunchWatcher::report_matches() {
  std::lock_guard lk(mu_);
  for (size_t t = 0; t < slots_.size(); ++t) {
    Slot& slot = slots_[t];
    if (slot.done || slot.matched == 0 || slot.last_name.empty()) continue;
    const uint64_t last = std::min<uint64_t>(slot.matched - 1, targets_[t].dispatch);
    if (last == slot.last_emitted) continue;
    nlohmann::json line = format::events::match(last, slot.last_name);
    if (multi_) format::events::add_target(line, static_cast<int>(t));
    emit(std::move(line));
    slot.last_emitted = last;
  }
}

}  // namespace kerncap::capture
