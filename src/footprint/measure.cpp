// `kerncap footprint`'s measurement: one replay of the captured launch with every global
// load, store and atomic patched to call patch.cu, which fills per-region bitmaps on the
// device. The Compute Sanitizer API must see the driver start (subscribe before cuInit),
// so the subscription is made before the replay Session exists.
#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "footprint/footprint.hpp"
#include "footprint/patch_image.hpp"
#include "footprint/region_table.hpp"
#include "footprint/sanitizer_api.hpp"
#include "replay/probe.hpp"
#include "replay/session.hpp"

namespace kerncap::footprint {
namespace {

// Patches every module the driver loads while it exists. Sanitizer callbacks run inside
// driver calls: nothing may throw there, so the first failure is kept for check().
class Instrumenter {
 public:
  explicit Instrumenter(const SanitizerApi& api) : api_(api) {
    KC_SAN(api_, sanitizerSubscribe(&subscriber_, &Instrumenter::on_callback, this));
    KC_SAN(api_, sanitizerEnableDomain(1, subscriber_, SANITIZER_CB_DOMAIN_RESOURCE));
  }
  ~Instrumenter() {
    if (subscriber_) api_.sanitizerUnsubscribe(subscriber_);
  }
  Instrumenter(const Instrumenter&) = delete;
  Instrumenter& operator=(const Instrumenter&) = delete;

  // After the Session loaded the kernel's module: it must have been patched.
  void check() const {
    if (!error_.empty()) device_error("the Compute Sanitizer API could not instrument the kernel's module: " + error_);
    if (modules_.empty())
      device_error("the Compute Sanitizer API reported no module load, so nothing was instrumented (is another tool "
                   "such as compute-sanitizer, nsys or ncu attached to this process?)");
  }

  // The captured kernel in one of the patched modules.
  std::pair<CUmodule, CUfunction> function(const std::string& mangled) const {
    for (CUmodule mod : modules_) {
      CUfunction f = nullptr;
      if (KC_CU_TRY(cuModuleGetFunction(&f, mod, mangled.c_str())) == CUDA_SUCCESS) return {mod, f};
    }
    device_error(fmt::format("none of the {} instrumented module(s) holds {}", modules_.size(), mangled));
  }

 private:
  static void SANITIZERAPI on_callback(void* self, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid,
                                       const void* data) {
    if (domain != SANITIZER_CB_DOMAIN_RESOURCE || cbid != SANITIZER_CBID_RESOURCE_MODULE_LOADED) return;
    static_cast<Instrumenter*>(self)->module_loaded(*static_cast<const Sanitizer_ResourceModuleData*>(data));
  }

  void module_loaded(const Sanitizer_ResourceModuleData& d) noexcept {
    if (adding_patches_ || !error_.empty()) return;  // our own patch image, or already failed
    auto failed = [&](SanitizerResult r, const char* call) {
      error_ = sanitizer_error_text(api_, r, call, __FILE__, __LINE__);
    };
    if (std::find(contexts_.begin(), contexts_.end(), d.context) == contexts_.end()) {
      adding_patches_ = true;
      SanitizerResult r = KC_SAN_TRY(api_, sanitizerAddPatches(patch_image().data(), d.context));
      adding_patches_ = false;
      if (r != SANITIZER_SUCCESS) return failed(r, "sanitizerAddPatches(embedded patch)");
      contexts_.push_back(d.context);
    }
    SanitizerResult r = KC_SAN_TRY(
        api_, sanitizerPatchInstructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, d.module, kPatchFunction));
    if (r != SANITIZER_SUCCESS) return failed(r, "sanitizerPatchInstructions(GLOBAL_MEMORY_ACCESS)");
    r = KC_SAN_TRY(api_, sanitizerPatchModule(d.module));
    if (r != SANITIZER_SUCCESS) return failed(r, "sanitizerPatchModule");
    modules_.push_back(d.module);
  }

  const SanitizerApi& api_;
  Sanitizer_SubscriberHandle subscriber_ = nullptr;
  std::vector<CUcontext> contexts_;
  std::vector<CUmodule> modules_;
  bool adding_patches_ = false;
  std::string error_;
};

class DeviceBuffer {
 public:
  explicit DeviceBuffer(uint64_t bytes) {
    KC_CU(cuMemAlloc(&ptr_, std::max<uint64_t>(bytes, 16)));
    KC_CU(cuMemsetD8(ptr_, 0, std::max<uint64_t>(bytes, 16)));
  }
  ~DeviceBuffer() { driver().cuMemFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr get() const { return ptr_; }

 private:
  CUdeviceptr ptr_ = 0;
};

std::string device_name() {
  CUdevice dev = 0;
  KC_CU(cuCtxGetDevice(&dev));
  char name[256] = {};
  KC_CU(cuDeviceGetName(name, sizeof name, dev));
  return name;
}

void check_room(uint64_t bytes, uint64_t region_bytes) {
  size_t free = 0, total = 0;
  KC_CU(cuMemGetInfo(&free, &total));
  if (bytes + (64ull << 20) > free)
    device_error(fmt::format("footprint needs {} of bitmaps for {} of captured regions, but only {} of GPU memory is "
                             "free after the restore",
                             human_bytes(bytes), human_bytes(region_bytes), human_bytes(free)));
}

// Launches, turning a fault into the message the footprint user needs.
float launch_instrumented(replay::Session& s) {
  try {
    return s.launch();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Device) throw;
    device_error(fmt::format("the kernel faulted under footprint instrumentation: {}\nIf `kerncap replay OUT` "
                             "faults too, the capture misses memory the kernel uses; if only the instrumented "
                             "launch faults, please report it",
                             e.what()));
  }
}

}  // namespace

bool built_with_sanitizer() { return true; }

format::Footprint measure(const MeasureOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const format::Capture capture = format::open_capture(o.capture);  // input errors first
  const SanitizerApi& api = load_sanitizer(o.sanitizer_library);
  if (std::string err = driver_load_error(); !err.empty()) device_error(err);

  Instrumenter inst(api);  // before the Session's cuInit
  replay::Options ro;
  ro.capture = o.capture;
  ro.progress = o.progress;
  replay::Session s(ro);
  inst.check();
  const format::Manifest& m = s.capture().manifest;
  const auto [module, function] = inst.function(m.mangled_name);

  std::vector<uint64_t> replay_addresses;
  uint64_t region_bytes = 0;
  for (size_t i = 0; i < m.regions.size(); ++i) {
    replay_addresses.push_back(s.address(i));
    region_bytes += m.regions[i].size;
  }
  const RegionTable table = build_region_table(m, replay_addresses);
  check_room(table.words * 4 + o.max_escapes * sizeof(kc_fp_escape), region_bytes);
  DeviceBuffer regions(table.entries.size() * sizeof(kc_fp_region));
  DeviceBuffer bitmaps(table.words * 4);
  DeviceBuffer escapes(o.max_escapes * sizeof(kc_fp_escape));
  DeviceBuffer header(sizeof(kc_fp_table));
  kc_fp_table t{};
  t.abi_version = KC_FP_ABI_VERSION;
  t.region_count = static_cast<uint32_t>(table.entries.size());
  t.regions = regions.get();
  t.bitmaps = bitmaps.get();
  t.escapes = escapes.get();
  t.escape_capacity = o.max_escapes;
  if (!table.entries.empty())
    KC_CU(cuMemcpyHtoD(regions.get(), table.entries.data(), table.entries.size() * sizeof(kc_fp_region)));
  KC_CU(cuMemcpyHtoD(header.get(), &t, sizeof t));

  // Warm-up (loads the lazily loaded kernel) with the patch inert, so the timed launches
  // compare execution, not loading.
  if (o.timing) {
    KC_SAN(api, sanitizerSetCallbackData(function, nullptr));
    s.restore();
    launch_instrumented(s);
  }
  s.restore();
  KC_SAN(api, sanitizerSetCallbackData(function, reinterpret_cast<void*>(header.get())));
  if (o.progress) log::info("footprint: launching the instrumented kernel");
  const float instrumented_ms = launch_instrumented(s);
  KC_SAN(api, sanitizerSetCallbackData(function, nullptr));

  KC_CU(cuMemcpyDtoH(&t, header.get(), sizeof t));
  std::vector<uint32_t> words(table.words);
  if (!words.empty()) KC_CU(cuMemcpyDtoH(words.data(), bitmaps.get(), words.size() * 4));
  std::vector<kc_fp_escape> esc(std::min<uint64_t>(t.escape_count, o.max_escapes));
  if (!esc.empty()) KC_CU(cuMemcpyDtoH(esc.data(), escapes.get(), esc.size() * sizeof(kc_fp_escape)));

  format::Footprint f;
  f.tool_version = KERNCAP_VERSION;
  f.kernel = m.mangled_name;
  f.image_hash = m.image_hash;
  f.device_name = device_name();
  f.regions = collect_regions(m, table, words);
  for (const auto& e : esc) f.escapes.push_back(to_escape(e, m, table));
  f.escape_count = t.escape_count;
  f.accesses = t.accesses;
  f.instrumented_ms = instrumented_ms;
  f.sanitizer_library = api.path.string();
  uint64_t pc = 0, size = 0;
  if (KC_SAN_TRY(api, sanitizerGetFunctionPcAndSize(module, m.mangled_name.c_str(), &pc, &size)) == SANITIZER_SUCCESS)
    f.kernel_pc = pc;

  // TMA bulk copies bypass the instrumentation: probe what it could not see.
  replay::probe_writes(s, f);

  if (o.timing) {
    // The same launch without instrumentation, for the slowdown; not worth failing over.
    SanitizerResult r = KC_SAN_TRY(api, sanitizerUnpatchModule(module));
    if (r == SANITIZER_SUCCESS) {
      s.restore();
      s.launch();  // the unpatched code's first launch may load it again
      s.restore();
      f.plain_ms = s.launch();
    } else {
      log::info("footprint: {}; the slowdown is not measured",
                sanitizer_error_text(api, r, "sanitizerUnpatchModule", __FILE__, __LINE__));
    }
  }
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return f;
}

}  // namespace kerncap::footprint
