// Capture mode with a window of launches: the driver's side of the window recorder
// (describing a launch, keeping its parameter bytes and image) and the capturer's (BEFORE at
// the first launch, AFTER and publication with window.json at the last). The decisions are
// in window_recorder.cpp; the snapshot, the chunk store and the capture directory are the
// one-launch capture's own (capturer.cpp): a window adds files to that directory.
#include "capture/window_mode.hpp"

#include <cupti.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "capture/capturer.hpp"
#include "capture/context_scope.hpp"
#include "capture/cupti_check.hpp"
#include "capture/events.hpp"
#include "capture/graph_driver.hpp"
#include "capture/graph_tracker.hpp"
#include "capture/in_app_records.hpp"
#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "capture/watcher.hpp"
#include "capture/window_nvtx.hpp"
#include "capture/window_recorder.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/private_files.hpp"
#include "cubin/cubin.hpp"
#include "format/events.hpp"
#include "format/out_layout.hpp"
#include "format/window_liveout.hpp"
#include "storage/capture_writer.hpp"

namespace kerncap::capture {
namespace {

class DriverWindowOps final : public WindowOps {
 public:
  explicit DriverWindowOps(Inventory& inventory) : inventory_(inventory) {}

  bool describe_kernel(CUpti_CallbackId cbid, const CUpti_CallbackData& cb, const std::string& mangled, size_t index,
                       format::WindowOp* op, std::string* why) override {
    LaunchArgs args;
    if (!decode_launch(cbid, cb.functionParams, &args)) {
      *why = "its parameters cannot be decoded";
      return false;
    }
    // The context is the launch's; kerncap's queries need it current.
    const ContextScope scope(cb.context);
    const ResolvedFunction fn = resolve_function(args.f);
    format::Manifest m;
    if (sm_ == 0) {
      CUdevice dev = 0;
      int major = 0, minor = 0;
      if (KC_CU_TRY(cuCtxGetDevice(&dev)) == CUDA_SUCCESS &&
          KC_CU_TRY(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) == CUDA_SUCCESS &&
          KC_CU_TRY(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) == CUDA_SUCCESS)
        sm_ = major * 10 + minor;
    }
    m.cc_major = sm_ / 10;
    m.cc_minor = sm_ % 10;
    describe_attributes(args, fn.function, &m);
    const FunctionFacts facts = function_facts(args, fn.function, m);
    const KeptImage* image = inventory_.images.find(mangled, functions_of(fn.module), fn.module, facts);
    if (!image) {
      *why = "its code image was not seen at module load (loaded before kerncap was injected?)";
      return false;
    }
    const cubin::ImageKind kind = cubin::detect_kind(image->bytes);
    const std::string kind_name = kind == cubin::ImageKind::Unknown ? "cubin" : cubin::to_string(kind);
    // Everything here runs while the application waits for its launch (and counts in the
    // window's in-app time): the image is parsed only when the driver cannot give the layout.
    std::vector<format::ParamSlot> slots = driver_param_layout(args.f, fn.was_kernel_handle);
    if (slots.empty())
      if (const cubin::Image* parsed = parsed_image(image->hash, image->bytes))
        if (const auto* k = parsed->find_kernel(mangled))
          for (const auto& pi : k->params) slots.push_back({pi.offset, pi.size});
    std::vector<uint8_t> bytes;
    std::string source;
    if (!pack_params(args, slots, &bytes, &source, why)) return false;
    if (bytes.size() > format::kMaxWindowParamBytes) {
      *why = fmt::format("its parameter buffer has {} bytes", bytes.size());
      return false;
    }
    op->kind = format::WindowOp::Kind::Kernel;
    op->mangled = mangled;
    op->image_kind = kind_name;
    op->image_hash = image->hash;
    op->grid = m.grid;
    op->block = m.block;
    op->shared_mem_bytes = m.shared_mem_bytes;
    op->cooperative = m.cooperative;
    op->launch_attrs = m.launch_attrs;
    op->func_attrs = m.func_attrs;
    op->params = source == "extra" ? std::vector<format::ParamSlot>{} : slots;
    op->params_size = bytes.size();
    std::lock_guard lk(mu_);
    params_[index] = std::move(bytes);
    // The image's bytes are copied at the window's end (write), not here (an image is megabytes
    // and this is the application's time): the store's entry stays where it is while no image
    // is added; otherwise the same query finds it again (checked by hash).
    if (!images_.count(image->hash))
      images_[image->hash] = Found{kind_name, mangled, fn.module, facts, image, inventory_.images.loaded(), {}};
    if (fn.module) modules_.emplace(image->hash, fn.module);
    return true;
  }

  bool launch_params(CUpti_CallbackId cbid, const CUpti_CallbackData& cb, std::vector<uint8_t>* bytes) override {
    LaunchArgs args;
    if (!decode_launch(cbid, cb.functionParams, &args)) return false;
    const ContextScope scope(cb.context);
    // The layout once per function (the driver's; no image parse after the window: a launch
    // whose layout the driver cannot give is not observed, and what it reaches stays unseen).
    std::vector<format::ParamSlot> slots;
    {
      std::lock_guard lk(mu_);
      const auto it = layouts_.find(args.f);
      if (it != layouts_.end()) slots = it->second;
    }
    if (slots.empty() && !args.extra) {
      const ResolvedFunction fn = resolve_function(args.f);
      slots = driver_param_layout(args.f, fn.was_kernel_handle);
      std::lock_guard lk(mu_);
      layouts_[args.f] = slots;
    }
    std::string source, why;
    return pack_params(args, slots, bytes, &source, &why);
  }

  uint64_t gpu_clock_ns() override {
    uint64_t t = 0;
    return KC_CUPTI(cuptiGetTimestamp(&t)) ? t : 0;
  }

  // The window's files into the capture directory being written, after its operations' module
  // globals that the capture does not hold are named (the first launch's module globals are
  // regions of the capture; another image's are not). At the window's end: not in its time.
  // `first_image`: the capture's own launch's image (the manifest's): its module globals are
  // regions of the capture.
  void write(format::CaptureWriter& writer, format::Window& w, uint64_t first_image) {
    std::lock_guard lk(mu_);
    first_image_ = first_image;
    // Only the images the window's operations use (a kernel of a stream the window did not
    // join was described too, and is left out with its image).
    std::set<uint64_t> used;
    for (const auto& op : w.ops)
      if (op.kind == format::WindowOp::Kind::Kernel) used.insert(op.image_hash);
    std::erase_if(images_, [&](const auto& e) { return !used.count(e.first); });
    for (auto& [hash, found] : images_) {
      const KeptImage* image = inventory_.images.loaded() == found.loaded_at
                                   ? found.image
                                   : inventory_.images.find(found.mangled, functions_of_locked(found.module),
                                                            found.module, found.facts);
      if (!image || image->hash != hash)
        device_error(fmt::format("the code image of {} cannot be found again at the window's end", found.mangled));
      found.bytes = image->bytes;
    }
    std::map<uint64_t, std::vector<std::string>> uncaptured;
    for (auto& op : w.ops) {
      if (op.kind != format::WindowOp::Kind::Kernel || op.image_hash == first_image_) continue;
      auto it = uncaptured.find(op.image_hash);
      if (it == uncaptured.end()) {
        std::vector<std::string> names;
        const auto img = images_.find(op.image_hash);
        const auto mod = modules_.find(op.image_hash);
        const cubin::Image* parsed = img == images_.end() ? nullptr : parse_locked(op.image_hash, img->second.bytes);
        if (parsed && mod != modules_.end())
          for (const auto& g : parsed->globals) {
            CUdeviceptr addr = 0;
            size_t size = 0;
            if (KC_CU_TRY(cuModuleGetGlobal(&addr, &size, mod->second, g.name.c_str())) == CUDA_SUCCESS && size)
              names.push_back(g.name);
          }
        it = uncaptured.emplace(op.image_hash, std::move(names)).first;
      }
      op.uncaptured_globals = it->second;
    }
    files::create_private_dirs(writer.dir() / "window");
    for (size_t i = 0; i < w.ops.size(); ++i) {
      if (w.ops[i].kind != format::WindowOp::Kind::Kernel) continue;
      // Op 0 was described after BEFORE; later ones as they came: each key once (the key the
      // recorder described it under: ops of streams not joined into the window are left out).
      const auto it = params_.find(w.ops[i].params_key == SIZE_MAX ? i : w.ops[i].params_key);
      if (it == params_.end()) device_error(fmt::format("window operation {} has no parameter bytes", i));
      format::write_file(writer.dir() / format::window_params_file(i), it->second.data(), it->second.size());
    }
    for (size_t i = 0; i < w.ops.size(); ++i)
      if (w.ops[i].kind == format::WindowOp::Kind::CopyH2D && w.ops[i].host_bytes)
        format::write_file(writer.dir() / format::window_h2d_file(i), w.ops[i].host_bytes->data(),
                           w.ops[i].host_bytes->size());
    for (const auto& [hash, image] : images_) {
      const std::string rel = format::window_image_file(hash, image.kind);
      if (!std::filesystem::exists(writer.dir() / rel)) format::write_file(writer.dir() / rel, image.bytes.data(), image.bytes.size());
    }
    const std::string text = to_json(w).dump(1);
    format::write_file(writer.dir() / format::kWindowFile, text.data(), text.size());
  }

 private:
  // A module's function names, asked of the driver once per module (every launch of the
  // window is described while the application waits).
  const std::vector<std::string>& functions_of(CUmodule module) {
    std::lock_guard lk(mu_);
    return functions_of_locked(module);
  }
  const std::vector<std::string>& functions_of_locked(CUmodule module) {  // mu_ held
    auto it = functions_.find(module);
    if (it == functions_.end()) it = functions_.emplace(module, module_function_names(module)).first;
    return it->second;
  }
  const cubin::Image* parsed_image(uint64_t hash, const std::vector<uint8_t>& bytes) {
    std::lock_guard lk(mu_);
    return parse_locked(hash, bytes);
  }
  const cubin::Image* parse_locked(uint64_t hash, const std::vector<uint8_t>& bytes) {  // mu_ held
    auto it = parsed_.find(hash);
    if (it != parsed_.end()) return it->second ? &*it->second : nullptr;
    std::optional<cubin::Image> p;
    try {
      p = cubin::parse_image(bytes, sm_);
    } catch (const std::exception& e) {
      log::warn("window: cannot read a code image ({}): its module globals are not named", e.what());
    }
    auto& slot = parsed_[hash] = std::move(p);
    return slot ? &*slot : nullptr;
  }

  Inventory& inventory_;
  std::mutex mu_;
  int sm_ = 0;
  uint64_t first_image_ = 0;
  std::map<size_t, std::vector<uint8_t>> params_;  // by operation index
  struct Found {  // how a window launch's image was found, to find it again at the end
    std::string kind, mangled;
    CUmodule module = nullptr;
    FunctionFacts facts;
    const KeptImage* image = nullptr;  // valid while the store's count of loads is `loaded_at`
    size_t loaded_at = 0;
    std::vector<uint8_t> bytes;  // filled at the end
  };
  std::map<uint64_t, Found> images_;  // by image hash
  std::map<uint64_t, std::optional<cubin::Image>> parsed_;
  std::map<CUmodule, std::vector<std::string>> functions_;
  std::map<uint64_t, CUmodule> modules_;  // image hash -> the module a window launch ran it from
  std::map<CUfunction, std::vector<format::ParamSlot>> layouts_;  // launches observed after the window
};

// The regions the window changed, as the live-out observation watches them: device memory by
// observation, the rest always live (the host or a module's kernels read them without a pointer
// in any launch's parameters).
std::vector<WindowChanged> window_changed_regions(const format::Manifest& m) {
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> extent;  // region id -> [lo, hi) changed
  for (const auto& run : m.after) {
    auto [it, fresh] = extent.emplace(run.region, std::make_pair(run.offset, run.offset + run.size));
    if (!fresh) {
      it->second.first = std::min(it->second.first, run.offset);
      it->second.second = std::max(it->second.second, run.offset + run.size);
    }
  }
  std::vector<WindowChanged> out;
  for (const auto& r : m.regions) {
    const auto it = extent.find(r.id);
    if (it == extent.end()) continue;
    WindowChanged c{r.id, r.base, r.size, it->second.first, it->second.second};
    using K = format::MemKind;
    if (r.kind == K::Global) {
      c.observable = false;
      c.evidence = "a module global (its module's kernels read it without a pointer): always live";
    } else if (r.kind == K::Managed || r.kind == K::HostMapped || r.kind == K::HostRegistered) {
      c.observable = false;
      c.evidence = fmt::format("{} memory (the host reads it without a CUDA call): always live", format::to_string(r.kind));
    } else if (r.kind == K::Array) {
      c.observable = false;
      c.evidence = "a CUDA array (read through textures): always live";
    }
    out.push_back(std::move(c));
  }
  return out;
}

class CapturerWindowEnds final : public WindowEnds {
 public:
  CapturerWindowEnds(Capturer& capturer, DriverWindowOps& ops, const Config& config)
      : capturer_(capturer), ops_(ops), config_(config) {}
  bool begin(const TargetLaunch& first) override {
    // With a live-out observation the application runs on after the capture (the observation
    // stops it, when the capture would have, once it has seen its launches).
    TargetLaunch t = first;
    stop_after_ = t.stop_after;
    if (config_.window_observe > 0) t.stop_after = false;
    return capturer_.begin(t);
  }
  std::optional<std::vector<WindowChanged>> finish(uint32_t first, const CUpti_CallbackData& last_exit,
                                                   const std::function<format::Window()>& window) override {
    std::optional<std::vector<WindowChanged>> changed;
    capturer_.set_before_publish([&](format::CaptureWriter& writer, format::Manifest& m) {
      changed = window_changed_regions(m);
      format::Window w = window();
      if (!config_.window_range.empty()) {  // the window is named by its range, not by launches
        w.range = true;
        w.from = config_.window_range;
        w.from_dispatch = config_.window_range_occurrence;
        w.to.clear();
        w.to_dispatch = 0;
      }
      ops_.write(writer, w, m.image_hash);
      log::info("window: {} operations ({} kernel launches), AFTER {} in {} runs{}", w.ops.size(), w.kernels(),
                m.after_bytes, m.after.size(),
                w.in_app_window_ns ? fmt::format(", in-app {:.3f} ms", *w.in_app_window_ns / 1e6) : std::string());
      if (w.foreign_ops)
        log::warn("window: {} operation(s) ran in the process during the window but are not part of it (e.g. {})",
                  w.foreign_ops, w.foreign_examples.empty() ? std::string("?") : w.foreign_examples[0]);
    });
    // The pending capture is the first launch's: finish it as that launch's exit would, with
    // the last launch's context and result.
    CUpti_CallbackData exit = last_exit;
    exit.correlationId = first;
    capturer_.finish(exit);
    // Published when the capture directory has its manifest (finish reports its own failures).
    std::error_code ec;
    if (!std::filesystem::exists(format::out::capture_dir(config_.output) / format::kManifestName, ec)) return std::nullopt;
    return changed;
  }
  void abandon(uint32_t first, const std::string& why) override { capturer_.abandon_pending(first, why); }
  void observed(const format::WindowLiveOut& result, bool horizon) override {
    try {
      const std::filesystem::path dir = format::out::capture_dir(config_.output);
      files::replace_file(dir / format::kWindowLiveOutFile, to_json(result).dump(1));
    } catch (const std::exception& e) {
      log::warn("window: cannot write the live-out observation: {}", e.what());
    }
    if (!horizon || !stop_after_) return;
    log::info("stopping the application now that the window and its live-out observation are complete (--continue "
              "lets it run on)");
    emit(format::events::stopping());
    std::fflush(nullptr);
    ::_exit(0);
  }

 private:
  Capturer& capturer_;
  DriverWindowOps& ops_;
  const Config& config_;
  bool stop_after_ = false;
};

struct WindowMode {
  explicit WindowMode(Config c)
      : config(std::move(c)), inventory(config), capturer(config, inventory), ops(inventory), ends(capturer, ops, config),
        recorder(config, inventory, queries, ops, ends), watcher(config, inventory, queries, recorder),
        graphs(graph_queries) {
    // Every window follows graphs: a graph launch's window is one, and a FROM..TO window records
    // the graphs its stream launches (or refuses itself) and observes those launched after it.
    recorder.watch_graphs(graphs, config.window_graph && config.in_app_time == Config::InAppTime::Match
                                      ? &enable_in_app_records
                                      : nullptr);
    if (!config.window_range.empty())
      range = std::make_unique<RangeWindow>(
          config, queries, recorder, config.in_app_time == Config::InAppTime::Match ? &enable_in_app_records : nullptr);
  }
  Config config;
  Inventory inventory;
  DriverLaunchQueries queries;
  Capturer capturer;
  DriverWindowOps ops;
  CapturerWindowEnds ends;
  WindowRecorder recorder;
  LaunchWatcher watcher;
  // The one graph tracker, fed here (the watcher follows no graph in window mode): the graph
  // launch's window (Config::window_graph), and graphs inside or after a FROM..TO window.
  DriverGraphQueries graph_queries;
  GraphTracker graphs;
  // A window bounded by an NVTX range (Config::window_range): opens and ends the recorder's window.
  std::unique_ptr<RangeWindow> range;
};
WindowMode* g_window = nullptr;  // leaked on purpose: callbacks may fire during exit

void CUPTIAPI window_trampoline(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  try {
    auto* mode = static_cast<WindowMode*>(userdata);
    if (domain == CUPTI_CB_DOMAIN_NVTX) {  // CUpti_NvtxData, not CUpti_CallbackData: the range's only
      if (mode->range && !t_in_tool) {
        ToolScope scope;
        mode->range->on_nvtx(cbid, data, std::this_thread::get_id());
      }
      return;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && !t_in_tool) {
      ToolScope scope;
      if (mode->graphs.on_driver_api(cbid, static_cast<const CUpti_CallbackData*>(data))) return;
    }
    mode->recorder.on_callback(domain, cbid, data);
    if (mode->range && domain == CUPTI_CB_DOMAIN_DRIVER_API && !t_in_tool) {  // after the recorder: its first launch
      ToolScope scope;
      mode->range->on_driver(cbid, static_cast<const CUpti_CallbackData*>(data), std::this_thread::get_id());
    }
    mode->watcher.on_callback(domain, cbid, data);
  } catch (const std::exception& e) {
    log::warn("internal error in a callback (ignored): {}", e.what());
  } catch (...) {
    log::warn("internal error in a callback (ignored)");
  }
}

void on_record(uint32_t correlation, const char* name, uint64_t start, uint64_t end) {
  if (g_window) g_window->recorder.on_kernel_record(correlation, name, start, end);
}

void window_at_exit() {
  try {
    ToolScope scope;
    if (!g_window) return;
    if (g_window->range) g_window->range->at_exit();
    g_window->recorder.at_exit();
    g_window->watcher.report_unlaunched_kernels();
    g_window->watcher.report_matches();
  } catch (...) {
  }
}

bool ok(CuptiStatus st, const char* what) {
  if (st) return true;
  emit(format::events::error(fmt::format("{} failed: {}", what, cupti_error_text(st.result))));
  return false;
}

}  // namespace

void start_window_capture(const Config& config) {
  auto* mode = new WindowMode(config);
  g_window = mode;
  std::atexit(&window_at_exit);
  const Subscription sub = subscribe_named(window_trampoline, mode, "kerncap capture");
  if (!sub.status) {
    log::warn("another CUPTI client{} is active in this process; kerncap cannot run beside it",
              sub.other.empty() ? std::string() : fmt::format(" ({})", sub.other));
    ok(sub.status, "cuptiSubscribe_v2");
    return;
  }
  std::vector<CUpti_CallbackId> ids = LaunchWatcher::driver_callback_ids();
  for (CUpti_CallbackId id : WindowRecorder::callback_ids()) ids.push_back(id);
  for (CUpti_CallbackId id : ids)
    ok(KC_CUPTI(cuptiEnableCallback(1, sub.handle, CUPTI_CB_DOMAIN_DRIVER_API, id)), "cuptiEnableCallback");
  ok(KC_CUPTI(cuptiEnableCallback(1, sub.handle, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED)),
     "cuptiEnableCallback");
  // NVTX's pushes and pops reach CUPTI when NVTX_INJECTION64_PATH names libkerncap.so
  // (window_nvtx_inject.cpp); without it these callbacks never fire (said at exit).
  if (mode->range)
    for (CUpti_CallbackId id : nvtx_range_callback_ids())
      ok(KC_CUPTI(cuptiEnableCallback(1, sub.handle, CUPTI_CB_DOMAIN_NVTX, id)), "cuptiEnableCallback (NVTX)");
  // Kernel records: the window's in-app time (and its first kernel's, as one capture has).
  if (config.in_app_time != Config::InAppTime::Off) {
    set_kernel_record_hook(&on_record);
    start_in_app_records(config.in_app_time == Config::InAppTime::Start);
    if (config.in_app_time == Config::InAppTime::Match) mode->watcher.on_in_app_window(&enable_in_app_records);
  }
  if (mode->range)
    log::info("window capture: the NVTX range '{}' (push {} from 0), from its first kernel launch to its pop",
              config.window_range, config.window_range_occurrence);
  else if (config.window_graph)
    log::info("window capture: the graph launch {} (from 0) of {}", config.window_graph_launch,
              config.window_graph_kernel.empty() ? std::string("any graph")
                                                 : fmt::format("the graphs holding '{}'", config.window_graph_kernel));
  else
    log::info("window capture: from '{}' (match {}) to the {}th launch of '{}' on its stream", config.kernel,
              config.dispatch, config.window_end_dispatch, config.window_end);
}

}  // namespace kerncap::capture
