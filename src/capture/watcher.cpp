#include "capture/watcher.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "capture/events.hpp"
#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "common/log.hpp"
#include "format/out_layout.hpp"
#include "names/demangle.hpp"

namespace kerncap::capture {
namespace {

std::atomic<int> g_ignore_depth{0};
// The image the driver handed over most recently on this thread (module-load callbacks fire
// inside cuModuleLoadData*, whose exit then gives the CUmodule).
thread_local uint64_t t_last_image = 0;

bool is_module_load(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData || cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary;
}

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
    : config_(config), inventory_(inventory), driver_(driver), target_(target) {}

std::vector<CUpti_CallbackId> LaunchWatcher::driver_callback_ids() {
  std::vector<CUpti_CallbackId> ids = Tracker::callback_ids();
  for (auto id : TextureTracker::callback_ids()) ids.push_back(id);
  for (auto id : launch_callback_ids()) ids.push_back(id);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleUnload);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
  for (auto id : GraphTracker::callback_ids()) ids.push_back(id);
  return ids;
}

uint64_t LaunchWatcher::launches() const {
  std::lock_guard lk(mu_);
  return launches_;
}

void LaunchWatcher::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // Module loads are taken even while kerncap itself is calling the driver: with lazy
  // loading, our own queries at the target launch are what loads its module.
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      ToolScope scope;
      const auto* rd = static_cast<const CUpti_ResourceData*>(data);
      const auto* mod = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
      if (mod) t_last_image = inventory_.images.on_module_loaded(mod->pCubin, mod->cubinSize);
    }
    return;
  }
  if (t_in_tool) return;
  ToolScope scope;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (is_module_load(cbid)) {
    const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
    // All three parameter structs start with `CUmodule* module`.
    const auto* p = static_cast<const cuModuleLoadData_params*>(cb->functionParams);
    if (cb->callbackSite == CUPTI_API_ENTER) t_last_image = 0;
    else if (rv && *rv == CUDA_SUCCESS && p->module) inventory_.images.bind_module(*p->module, t_last_image);
    return;
  }
  if (is_unload(cbid)) {
    if (cb->callbackSite == CUPTI_API_EXIT) {
      std::lock_guard lk(mu_);
      skip_handles_.clear();
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
  if (is_launch_cbid(cbid)) on_launch(cbid, cb);
}

void LaunchWatcher::on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_EXIT) {
    if (!done_) return;  // nothing can be pending before the target was chosen
    std::optional<Pending> p;
    {
      std::lock_guard lk(mu_);
      if (pending_ && pending_->correlation == cb->correlationId && pending_->thread == std::this_thread::get_id())
        p.swap(pending_);
    }
    if (p) target_.finish(*cb);
    return;
  }
  if (done_) return;
  LaunchArgs args;
  if (!decode_launch(cbid, cb->functionParams, &args)) return;
  if (known_skip(args.f, cb->context)) return;
  std::string mangled = cb->symbolName ? cb->symbolName : "";
  if (mangled.empty()) mangled = driver_.kernel_name(args.f);
  if (mangled.empty()) return;
  if (!on_chosen_device(mangled, cb->context)) {
    remember_skip(args.f, cb->context);
    return;
  }
  uint64_t launch_index = 0;
  bool matches = false;
  if (!is_target(mangled, args.stream, &launch_index, true, &matches)) {
    if (!matches) remember_skip(args.f, cb->context);
    return;
  }
  done_ = true;
  if (!target_.begin(TargetLaunch{cbid, cb, mangled, launch_index})) return;
  std::lock_guard lk(mu_);
  pending_ = Pending{cb->correlationId, std::this_thread::get_id()};
}

bool LaunchWatcher::known_skip(CUfunction f, CUcontext ctx) {
  if (!f) return false;  // nothing to key on (a fake launch in a test)
  std::lock_guard lk(mu_);
  if (!skip_handles_.count({f, ctx})) return false;
  ++launches_;  // still a launch of this process: launch_index counts every one
  return true;
}

void LaunchWatcher::remember_skip(CUfunction f, CUcontext ctx) {
  if (!f) return;
  std::lock_guard lk(mu_);
  if (skip_handles_.size() >= 65536) skip_handles_.clear();  // bounded; a miss only costs the slow path
  skip_handles_.insert({f, ctx});
}

bool LaunchWatcher::is_target(const std::string& mangled, CUstream stream, uint64_t* launch_index,
                              bool check_stream, bool* name_matches) {
  std::lock_guard lk(mu_);
  *launch_index = launches_++;
  auto it = name_matches_.find(mangled);
  if (it == name_matches_.end()) {
    std::string dem = names::demangle(mangled);
    bool m = inventory_.matcher.matches(mangled, dem);
    it = name_matches_.emplace(mangled, m).first;
    emit(format::events::seen(mangled, dem, m));
  }
  if (name_matches) *name_matches = it->second;
  if (it->second && !first_match_seen_) {
    first_match_seen_ = true;
    if (first_match_hook_) first_match_hook_();
  }
  if (!it->second || done_) return false;
  if (check_stream && driver_.stream_is_capturing(stream)) {
    // Recorded into a graph: it counts when the graph runs (graph_watch.cpp).
    log::debug("not counting a launch of {}: its stream is being captured into a CUDA graph, so the kernel "
               "runs when the graph is launched",
               names::demangle(mangled));
    emit(format::events::skipped(mangled, "stream is capturing a CUDA graph"));
    return false;
  }
  if (ignore_depth() > 0) {
    // An autotuner is benchmarking configurations (the Triton shim says so): these launches
    // are not the application's, so they are not counted.
    if (ignored_names_.insert(mangled).second)
      emit(format::events::ignored(mangled, "autotuner benchmark"));
    return false;
  }
  const uint64_t index = matched_++;
  // A "match" event is a write(2): one per launch would cost a frequently launched kernel
  // more than its launch. The first few, powers of two, the target, and the last one at exit
  // (report_matches) tell the launcher what it needs (how far the count got).
  if (index <= config_.dispatch && (index < 16 || (index & (index - 1)) == 0 || index == config_.dispatch)) {
    emit(format::events::match(index, mangled));
    last_match_emitted_ = index;
  } else {
    last_match_name_ = mangled;
  }
  if (index != config_.dispatch) return false;
  if (!claim()) {
    done_ = true;  // another process of this application took the capture
    return false;
  }
  return true;
}

void LaunchWatcher::report_matches() {
  std::lock_guard lk(mu_);
  if (done_ || matched_ == 0 || matched_ - 1 == last_match_emitted_ || matched_ - 1 > config_.dispatch) return;
  last_match_emitted_ = matched_ - 1;
  emit(format::events::match(last_match_emitted_, last_match_name_));
}

bool LaunchWatcher::on_chosen_device(const std::string& mangled, CUcontext ctx) {
  if (config_.device < 0) return true;
  const int dev = driver_.device_of(ctx);
  if (dev == config_.device) return true;
  std::lock_guard lk(mu_);
  ++launches_;  // still a launch of this process: launch_index counts every one
  if (other_device_names_.insert(mangled).second)
    emit(format::events::ignored(mangled, dev < 0 ? std::string("on an unknown CUDA device (--device)")
                                                  : "on CUDA device " + std::to_string(dev) + ", not --device " +
                                                        std::to_string(config_.device)));
  return false;
}

bool LaunchWatcher::claim() {
  // One capture per extract, even when several processes of the application use CUDA:
  // the first to create the file takes it (O_EXCL is atomic across processes).
  std::string path = format::out::claim_file(config_.output).string();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::string pid = std::to_string(::getpid());
  ssize_t n = ::write(fd, pid.data(), pid.size());
  (void)n;  // the file's existence is the claim; its content is for people
  ::close(fd);
  return true;
}

}  // namespace kerncap::capture
