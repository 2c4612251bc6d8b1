#include "capture/capturer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <span>


#include "capture/events.hpp"
#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"

namespace kerncap::capture {
namespace fs = std::filesystem;
using format::MemKind;

namespace {
std::atomic<int> g_ignore_depth{0};
// The image the driver handed over most recently on this thread (module-load callbacks fire
// inside cuModuleLoadData*, whose exit then gives the CUmodule).
thread_local uint64_t t_last_image = 0;
}  // namespace

int ignore_depth() { return g_ignore_depth.load(); }
void ignore_begin() { ++g_ignore_depth; }
void ignore_end() {
  int v = g_ignore_depth.load();
  while (v > 0 && !g_ignore_depth.compare_exchange_weak(v, v - 1)) {
  }
}

namespace {

std::string read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(s.begin(), s.end(), '\0', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// Adjacent VMM mappings (PyTorch expandable segments map piece by piece) become one region.
std::vector<TrackedRange> coalesce(std::vector<TrackedRange> ranges) {
  std::vector<TrackedRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && out.back().kind == static_cast<int>(MemKind::Vmm) && r.kind == out.back().kind &&
        out.back().end() == r.base)
      out.back().size += r.size;
    else
      out.push_back(r);
  }
  return out;
}

// Makes the launch's context current for kerncap's own calls and restores the thread's
// previous state afterwards (the runtime does not always leave it current).
class ContextScope {
 public:
  explicit ContextScope(CUcontext ctx) {
    if (ctx && KC_CU_TRY(cuCtxPushCurrent(ctx)) == CUDA_SUCCESS) pushed_ = true;
  }
  ~ContextScope() {
    CUcontext popped = nullptr;
    if (pushed_) driver().cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_ = false;
};

void fill_device(format::Manifest& m) {
  const Driver& d = driver();
  CUdevice dev = 0;
  KC_CU(cuCtxGetDevice(&dev));
  m.device_ordinal = static_cast<int>(dev);
  char name[256] = {};
  if (d.cuDeviceGetName(name, sizeof(name), dev) == CUDA_SUCCESS) m.device_name = name;
  d.cuDeviceGetAttribute(&m.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.cuDeviceGetAttribute(&m.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  d.cuDriverGetVersion(&m.driver_version);
}

}  // namespace

Capturer::Capturer(Config config)
    : config_(std::move(config)), matcher_(config_.kernel, config_.regex), images_(matcher_, config_.dump_images ? config_.output + "/.kerncap/images" : "") {
  // Staging pieces must hold whole chunks (see snapshot_before).
  config_.staging_bytes = std::max<uint64_t>(config_.chunk_bytes, config_.staging_bytes / config_.chunk_bytes * config_.chunk_bytes);
}

std::vector<CUpti_CallbackId> Capturer::driver_callback_ids() {
  std::vector<CUpti_CallbackId> ids = Tracker::callback_ids();
  for (auto id : launch_callback_ids()) ids.push_back(id);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
  ids.push_back(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
  return ids;
}

void Capturer::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // Module loads are taken even while kerncap itself is calling the driver: with lazy
  // loading, our own queries at the target launch are what loads its module.
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      ToolScope scope;
      const auto* rd = static_cast<const CUpti_ResourceData*>(data);
      const auto* mod = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
      if (mod) t_last_image = images_.on_module_loaded(mod->pCubin, mod->cubinSize);
    }
    return;
  }
  if (t_in_tool) return;
  ToolScope scope;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData || cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary) {
    const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
    // All three parameter structs start with `CUmodule* module`.
    const auto* p = static_cast<const cuModuleLoadData_params*>(cb->functionParams);
    if (cb->callbackSite == CUPTI_API_ENTER) t_last_image = 0;
    else if (rv && *rv == CUDA_SUCCESS && p->module) images_.bind_module(*p->module, t_last_image);
    return;
  }
  if (tracker_.on_driver_api(cbid, cb)) return;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) {
    std::lock_guard lk(mu_);
    if (!graph_note_ && !done_) {
      graph_note_ = true;
      emit({{"event", "graph_launch"}});
    }
    return;
  }
  if (is_launch_cbid(cbid)) on_launch(cbid, cb);
}

bool Capturer::claim() {
  // One capture per extract, even when several processes of the application use CUDA.
  std::string path = config_.output + "/.kerncap/claim";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::string pid = std::to_string(::getpid());
  ssize_t n = ::write(fd, pid.data(), pid.size());
  (void)n;
  ::close(fd);
  return true;
}

bool Capturer::is_target(const CUpti_CallbackData* cb, const std::string& mangled, CUstream stream) {
  std::lock_guard lk(mu_);
  ++launches_;
  auto it = name_matches_.find(mangled);
  if (it == name_matches_.end()) {
    std::string dem = demangle(mangled);
    bool m = matcher_.matches(mangled, dem);
    it = name_matches_.emplace(mangled, m).first;
    emit({{"event", "seen"}, {"mangled", mangled}, {"demangled", dem}, {"matches", m}});
  }
  if (!it->second || done_) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (driver().cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE) {
    log::warn("skipping a launch of {}: its stream is being captured into a CUDA graph, so the kernel does "
              "not run now (launches inside graphs cannot be captured yet)",
              demangle(mangled));
    emit({{"event", "skipped"}, {"mangled", mangled}, {"why", "stream is capturing a CUDA graph"}});
    return false;
  }
  (void)cb;
  if (ignore_depth() > 0) {
    // An autotuner is benchmarking configurations (the Triton shim says so): these launches
    // are not the application's, so they are not counted.
    if (ignored_names_.insert(mangled).second)
      emit({{"event", "ignored"}, {"mangled", mangled}, {"why", "autotuner benchmark"}});
    return false;
  }
  const uint64_t index = matched_++;
  if (index <= config_.dispatch) emit({{"event", "match"}, {"index", index}, {"mangled", mangled}});
  if (index != config_.dispatch) return false;
  if (!claim()) {
    done_ = true;  // another process of this application took the capture
    return false;
  }
  return true;
}

void Capturer::on_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_EXIT) {
    if (pending_ && pending_->correlation == cb->correlationId && pending_->thread == std::this_thread::get_id())
      finish_capture(cb);
    return;
  }
  if (done_) return;
  LaunchArgs args;
  if (!decode_launch(cbid, cb->functionParams, &args)) return;
  std::string mangled = cb->symbolName ? cb->symbolName : "";
  if (mangled.empty()) {
    const char* n = nullptr;
    const Driver& d = driver();
    if (d.cuFuncGetName(&n, args.f) != CUDA_SUCCESS)
      d.cuKernelGetName(&n, reinterpret_cast<CUkernel>(args.f));
    if (n) mangled = n;
  }
  if (mangled.empty() || !is_target(cb, mangled, args.stream)) return;
  done_ = true;
  try {
    begin_capture(cbid, cb, mangled);
  } catch (const std::exception& e) {
    abandon(e.what());
  }
}

void Capturer::begin_capture(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const std::string& mangled) {
  ContextScope ctx(cb->context);
  auto p = std::make_unique<Pending>();
  p->start = std::chrono::steady_clock::now();
  p->correlation = cb->correlationId;
  p->thread = std::this_thread::get_id();
  p->partial = fs::path(config_.output) / fmt::format("capture.partial-{}", ::getpid());
  fs::remove_all(p->partial);
  fs::create_directories(p->partial / "mem");
  fs::create_directories(p->partial / "image");
  format::Manifest& m = p->manifest;
  m.tool_version = KERNCAP_VERSION;
  m.config = config_.to_json();
  m.pid = ::getpid();
  m.command = read_cmdline();
  m.mangled_name = mangled;
  m.demangled_name = demangle(mangled);
  m.dispatch = config_.dispatch;
  m.launch_index = launches_ - 1;
  m.chunk_bytes = config_.chunk_bytes;
  log::info("capturing launch {} of {} (dispatch {})", m.launch_index, m.demangled_name, m.dispatch);

  if (!driver_missing_entries().empty()) log::debug("driver lacks: {}", driver_missing_entries());
  // Everything queued before this launch must have finished: BEFORE is its true input.
  KC_CU(cuCtxSynchronize());
  fill_device(m);
  log::debug("device {} sm_{}{}", m.device_name, m.cc_major, m.cc_minor);

  LaunchArgs args;
  decode_launch(cbid, cb->functionParams, &args);
  ResolvedFunction fn = resolve_function(args.f);
  log::debug("function {} module {} (kernel handle: {})", static_cast<void*>(fn.function),
             static_cast<void*>(fn.module), fn.was_kernel_handle);
  describe_attributes(args, fn.function, &m);

  // Code image.
  const KeptImage* image = images_.find(mangled, module_function_names(fn.module), fn.module);
  log::debug("image {}", image ? fmt::format("{:#x}", image->hash) : std::string("none"));
  if (!image)
    device_error("the code image holding this kernel was not seen at module load (was the module loaded "
                 "before kerncap was injected?)");
  cubin::ImageKind kind = cubin::detect_kind(image->bytes);
  m.image_kind = kind == cubin::ImageKind::Unknown ? "cubin" : cubin::to_string(kind);
  m.image_hash = image->hash;
  m.image_file = fmt::format("image/{:016x}.{}", image->hash, m.image_kind);
  format::write_file(p->partial / m.image_file, image->bytes.data(), image->bytes.size());
  cubin::Image parsed;
  bool have_parsed = false;
  try {
    parsed = cubin::parse_image(image->bytes, m.cc_major * 10 + m.cc_minor);
    have_parsed = true;
  } catch (const std::exception& e) {
    log::warn("cannot read the code image ({}): module globals are not captured", e.what());
  }

  // Parameters: the driver's layout, else the image's .nv.info.
  m.params = driver_param_layout(args.f, fn.was_kernel_handle);
  log::debug("{} parameters from the driver", m.params.size());
  if (m.params.empty() && have_parsed)
    if (const auto* k = parsed.find_kernel(mangled))
      for (const auto& pi : k->params) m.params.push_back({pi.offset, pi.size});
  std::vector<uint8_t> param_bytes;
  std::string why;
  if (!pack_params(args, m.params, &param_bytes, &m.params_source, &why))
    device_error("cannot read the launch's parameters: " + why);
  m.params_size = param_bytes.size();
  format::write_file(p->partial / m.params_file, param_bytes.data(), param_bytes.size());

  // Regions: every live allocation, then the module's globals.
  uint32_t id = 0;
  for (const auto& r : coalesce(tracker_.live())) {
    RegionState st;
    st.region = {id, static_cast<MemKind>(r.kind), r.base, r.size, fmt::format("mem/{}.bin", id), 0, ""};
    st.address = r.base;
    p->regions.push_back(std::move(st));
    ++id;
  }
  if (have_parsed && fn.module) {
    for (const auto& g : parsed.globals) {
      CUdeviceptr addr = 0;
      size_t size = 0;
      if (driver().cuModuleGetGlobal(&addr, &size, fn.module, g.name.c_str()) != CUDA_SUCCESS || size == 0) continue;
      RegionState st;
      st.region = {id, MemKind::Global, addr, size, fmt::format("mem/{}.bin", id), 0, g.name};
      st.address = addr;
      p->regions.push_back(std::move(st));
      ++id;
    }
  }
  uint64_t total = 0;
  for (const auto& st : p->regions) total += st.region.size;
  m.before_bytes = total;
  log::info("snapshot BEFORE: {} regions, {}", p->regions.size(), human_bytes(total));
  p->stager = std::make_unique<Stager>(config_.staging_bytes);
  Progress progress("snapshot BEFORE", total, config_.verbose >= 1);
  for (auto& st : p->regions) snapshot_before(*p->stager, st, p->partial, config_.chunk_bytes, progress);
  progress.done();
  for (const auto& st : p->regions) m.regions.push_back(st.region);
  pending_ = std::move(p);
}

void Capturer::finish_capture(const CUpti_CallbackData* cb) {
  std::unique_ptr<Pending> p = std::move(pending_);
  ContextScope ctx(cb->context);
  try {
    const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
    if (rv && *rv != CUDA_SUCCESS)
      device_error(cu_error_text(*rv, "the captured launch", __FILE__, __LINE__));
    KC_CU(cuCtxSynchronize());
    format::Manifest& m = p->manifest;
    Progress progress("snapshot AFTER", m.before_bytes, config_.verbose >= 1);
    format::BlobWriter after(p->partial / m.after_file);
    for (const auto& st : p->regions)
      snapshot_after(*p->stager, st, after, config_.chunk_bytes, m.after, progress);
    after.close();
    progress.done();
    m.after_bytes = 0;
    for (const auto& r : m.after) m.after_bytes += r.size;
    m.capture_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p->start).count();
    format::write_json_atomic(p->partial / format::kManifestName, format::to_json(m));
    p->stager.reset();
    fs::path final_dir = fs::path(config_.output) / format::kCaptureDirName;
    fs::remove_all(final_dir);
    fs::rename(p->partial, final_dir);
    log::info("captured {} -> {} (BEFORE {}, AFTER {} in {} runs, {:.2f} s)", m.demangled_name, final_dir.string(),
              human_bytes(m.before_bytes), human_bytes(m.after_bytes), m.after.size(), m.capture_seconds);
    emit({{"event", "captured"}, {"dir", final_dir.string()}, {"continue", config_.keep_running}});
  } catch (const std::exception& e) {
    pending_ = std::move(p);
    abandon(e.what());
    return;
  }
  if (!config_.keep_running) {
    log::info("stopping the application now that the capture is complete (--continue lets it run on)");
    emit({{"event", "stopping"}});
    std::fflush(nullptr);
    ::_exit(0);
  }
}

void Capturer::abandon(const std::string& why) {
  log::warn("capture failed: {}", why);
  emit({{"event", "error"}, {"what", why}});
  if (pending_) {
    std::error_code ec;
    fs::remove_all(pending_->partial, ec);
    pending_.reset();
  }
}

}  // namespace kerncap::capture
