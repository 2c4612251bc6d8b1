#include "replay/session.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/launch_dims.hpp"
#include "common/log.hpp"
#include "common/work_pool.hpp"
#include "cubin/cubin.hpp"
#include "format/region_bytes.hpp"
#include "replay/global_match.hpp"
#include "replay/peer.hpp"
#include "replay/restore_plan.hpp"
#include "replay/uniform_check.hpp"

#include <xxhash.h>

namespace kerncap::replay {
namespace fs = std::filesystem;
using format::MemKind;

namespace {

// Launch attributes that describe the launch itself; those carrying handles of the
// application (events, graph nodes) cannot be replayed and are dropped.
bool replayable_attr(int id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      return true;
    default:
      return false;
  }
}

bool settable_func_attr(int id) {
  return id == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
         id == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT ||
         id == CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED ||
         id == CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
}

}  // namespace

bool replayable_launch_attribute(int id) { return replayable_attr(id); }
bool settable_function_attribute(int id) { return settable_func_attr(id); }

Session::Session(const Options& options) : options_(options) {
  // A failed open gives back what it took: the engine lives on in long-running processes
  // (Python, kc_open), where a leaked context, module or pinned buffer would outlive it.
  try {
    open(options);
  } catch (...) {
    release();
    throw;
  }
}

void Session::open(const Options& options) {
  capture_ = options.opened ? *options.opened : format::open_capture(options.capture);
  const format::Manifest& m = capture_.manifest;

  // 1. Before anything of ours takes address space: the driver, then the reservations.
  refuse_unreplayable(m);  // before CUDA: NCCL's kernels cannot run without their peers
  KC_CU(cuInit(0));
  // Which GPU: refused here, before any context, when its architecture is not the capture's.
  device_ = choose_device(m, visible_devices(), options.device);
  KC_CU(cuDriverGetVersion(&device_.driver_version));
  KC_CU(cuDeviceGet(&dev_, device_.ordinal));
  log::debug("replaying on device {}: {}", device_.ordinal, device_.why);
  log::debug("{}", peer_note(m, device_.ordinal));  // the commands print it (replay, validate)

  std::vector<Span> fixed;  // regions that must come back at their address (not globals)
  std::vector<bool> on_host;  // ... in host memory mapped for the device, as in the application
  std::vector<size_t> fixed_index;
  uint64_t managed = 0;
  for (size_t i = 0; i < m.regions.size(); ++i) {
    const MemKind k = m.regions[i].kind;
    // Globals live where the module puts them, arrays' contents where cuMemAlloc does.
    if (k == MemKind::Global || k == MemKind::Array) continue;
    fixed.push_back({m.regions[i].base, m.regions[i].base + m.regions[i].size});
    on_host.push_back(k == MemKind::HostMapped || k == MemKind::HostRegistered);
    fixed_index.push_back(i);
    if (k == MemKind::Managed) managed += m.regions[i].size;
  }
  // Managed memory cannot be allocated at a chosen address: it comes back as device memory,
  // where a prefetch to this device would have put it.
  if (managed)
    log::info("{} of managed memory replayed as memory of this device (as if prefetched to it): page migration "
              "the application's launch may have paid is not reproduced",
              human_bytes(managed));
  space_ = std::make_unique<AddressSpace>(dev_, options.allow_relocate);
  if (options.collide_region) {
    const format::Region* r = m.find_region(*options.collide_region);
    if (!r || r->kind == MemKind::Global || r->kind == MemKind::Array)
      usage_error(fmt::format("--collide {}: no such (non-global) region in the capture", *options.collide_region));
    space_->occupy_for_test({r->base, r->base + r->size});
  }
  space_->reserve(fixed, on_host);

  // 2. Context, physical memory, our own buffers.
  KC_CU(cuDevicePrimaryCtxRetain(&ctx_, dev_));
  KC_CU(cuCtxSetCurrent(ctx_));
  space_->map();
  addresses_.assign(m.regions.size(), 0);
  for (size_t k = 0; k < fixed_index.size(); ++k) addresses_[fixed_index[k]] = space_->address_of(k);
  for (size_t i = 0; i < m.regions.size(); ++i) {
    if (m.regions[i].kind != MemKind::Array) continue;
    CUdeviceptr p = 0;
    KC_CU(cuMemAlloc(&p, m.regions[i].size));
    array_buffers_.push_back(p);
    addresses_[i] = p;
  }
  void* a = nullptr;
  void* b = nullptr;
  KC_CU(cuMemHostAlloc(&a, staging_bytes_, 0));
  KC_CU(cuMemHostAlloc(&b, staging_bytes_, 0));
  staging_a_ = static_cast<uint8_t*>(a);
  staging_b_ = static_cast<uint8_t*>(b);
  KC_CU(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
  KC_CU(cuEventCreate(&ev_start_, CU_EVENT_DEFAULT));
  KC_CU(cuEventCreate(&ev_stop_, CU_EVENT_DEFAULT));
  for (CUevent& e : staged_) KC_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));

  // 3. The code, its globals (the driver picks their addresses: they always move).
  if (options.cubin) {
    if (!fs::exists(*options.cubin)) usage_error(fmt::format("--cubin {}: no such file", options.cubin->string()));
    variant_ = load_image(format::read_file(*options.cubin), options.cubin->string(), true);
    active_ = variant_.get();
  } else {
    captured_ = load_image(capture_.read_image(), "the captured image", false);  // hash-checked, always
    active_ = captured_.get();
  }
  activate(*active_);

  // 4. Parameters, with pointers into moved spans rewritten.
  params_ = capture_.read(m.params_file, "parameter bytes");
  for (const auto& s : m.params) {
    if (uint64_t{s.offset} + s.size > params_.size())
      input_error(fmt::format("parameter slot at offset {} lies outside the {}-byte parameter buffer", s.offset,
                              params_.size()));
    param_ptrs_.push_back(params_.data() + s.offset);
  }
  // 5. CUDA arrays, texture and surface objects (their handles are written by restore()).
  if (!m.textures.empty()) {
    textures_.create(
        m, [&](size_t i) { return addresses_.at(i); }, [&](uint64_t captured) { return translate(captured); });
    log::info("re-created {} CUDA arrays and {} texture/surface objects", m.textures.arrays.size(),
              m.textures.objects.size());
  }
  for (const auto& la : m.launch_attrs) {
    if (!replayable_attr(la.id)) {
      log::info("launch attribute {} ({}) refers to the application's objects and is not replayed", la.name, la.id);
      continue;
    }
    CUlaunchAttribute at{};
    at.id = static_cast<CUlaunchAttributeID>(la.id);
    std::memcpy(&at.value, la.raw.data(), std::min(la.raw.size(), sizeof(at.value)));
    attrs_.push_back(at);
  }
  bool has_coop = std::any_of(attrs_.begin(), attrs_.end(), [](auto& x) { return x.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE; });
  if (m.cooperative && !has_coop) {
    CUlaunchAttribute at{};
    at.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    at.value.cooperative = 1;
    attrs_.push_back(at);
  }
}

Session::~Session() { release(); }

void Session::release() noexcept {
  // Never throws: a failing release is logged and the rest still released. Without a
  // context nothing of ours exists (the driver may not even have loaded).
  if (!ctx_ && !space_) return;
  auto release = [](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) log::warn("{}", cu_error_text(r, what, __FILE__, __LINE__));
  };
  const Driver& d = driver();
  uniform_.reset();  // its module and buffer, while the context lives
  if (ev_start_) release(d.cuEventDestroy(ev_start_), "cuEventDestroy");
  if (ev_stop_) release(d.cuEventDestroy(ev_stop_), "cuEventDestroy");
  for (CUevent& e : staged_)
    if (e) release(d.cuEventDestroy(e), "cuEventDestroy");
  staged_[0] = staged_[1] = nullptr;
  if (stream_) release(d.cuStreamDestroy(stream_), "cuStreamDestroy");
  active_ = nullptr;
  textures_.release();
  for (CUdeviceptr p : array_buffers_) release(d.cuMemFree(p), "cuMemFree");
  array_buffers_.clear();
  free_image(variant_);
  free_image(captured_);
  if (staging_a_) release(d.cuMemFreeHost(staging_a_), "cuMemFreeHost");
  if (staging_b_) release(d.cuMemFreeHost(staging_b_), "cuMemFreeHost");
  space_.reset();
  if (ctx_) release(d.cuDevicePrimaryCtxRelease(dev_), "cuDevicePrimaryCtxRelease");
  ev_start_ = ev_stop_ = nullptr;
  stream_ = nullptr;
  staging_a_ = staging_b_ = nullptr;
  ctx_ = nullptr;
}

void Session::free_image(std::unique_ptr<Image>& image) noexcept {
  if (!image) return;
  const Driver& d = driver();
  auto release = [](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) log::warn("{}", cu_error_text(r, what, __FILE__, __LINE__));
  };
  if (image->module) release(d.cuModuleUnload(image->module), "cuModuleUnload");
  for (CUdeviceptr p : image->scratch) release(d.cuMemFree(p), "cuMemFree");
  image.reset();
}

std::unique_ptr<Session::Image> Session::load_image(std::vector<uint8_t> bytes, const std::string& desc, bool variant) {
  const format::Manifest& m = capture_.manifest;
  auto img = std::make_unique<Image>();
  img->desc = desc;
  img->hash = image_hash(bytes);
  // A variant recompiled from an edited copy names internal-linkage globals differently
  // (global_match.hpp): bind them by normalised name. Only the globals the kernel's code
  // reaches must be found; one the variant lacks that the kernel never used gets scratch
  // memory, so restore and compare treat it as before. All of this is host work: a variant
  // is refused before it reaches the driver where that is possible.
  std::vector<std::optional<std::string>> bound;
  std::string kernel = m.mangled_name;  // the kernel's name in this image
  if (variant) {
    kernel = kernel_in_variant(bytes, desc, m.mangled_name);
    bound = bind_variant_globals(bytes, desc);
  } else {
    for (const auto& r : m.regions)
      if (r.kind == MemKind::Global) bound.emplace_back(r.global);
  }
  const bool ptx = cubin::detect_kind(bytes) == cubin::ImageKind::Ptx;
  if (ptx) bytes.push_back(0);  // PTX text must be NUL-terminated
  // Whatever this loads is given back when a later step refuses the image.
  struct Guard {
    Session& s;
    std::unique_ptr<Image>& img;
    ~Guard() { s.free_image(img); }
  } guard{*this, img};
  CUresult r = KC_CU_TRY(cuModuleLoadData(&img->module, bytes.data()));
  if (r != CUDA_SUCCESS)
    device_error(cu_error_text(r, fmt::format("cuModuleLoadData({})", desc).c_str(), __FILE__, __LINE__) +
                 (variant ? "; was it built for this GPU's architecture?" : ""));
  r = KC_CU_TRY(cuModuleGetFunction(&img->function, img->module, kernel.c_str()));
  if (r != CUDA_SUCCESS) {
    if (ptx) bytes.pop_back();
    input_error(missing_kernel_message(bytes, desc, m.mangled_name));
  }
  if (variant) check_variant_layout(img->function, desc);
  for (const auto& fa : m.func_attrs)
    if (settable_func_attr(fa.id))
      KC_CU(cuFuncSetAttribute(img->function, static_cast<CUfunction_attribute>(fa.id), fa.value));
  if (m.shared_mem_bytes > 48 * 1024)
    KC_CU(cuFuncSetAttribute(img->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             static_cast<int>(m.shared_mem_bytes)));
  // A block beyond the kernel's launch bounds is refused here with the reason, not by the
  // launch (a bare CUDA_ERROR_INVALID_VALUE). The bounds are read from the image, not asked of
  // the driver: under footprint instrumentation the driver's answer is the patched code's.
  if (const int max_threads = launch_bound(bytes, m.cc_major * 10 + m.cc_minor, kernel); max_threads > 0) {
    const auto& block = options_.block ? *options_.block : m.block;
    const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
    if (threads > static_cast<uint64_t>(max_threads))
      input_error(block_too_large_message(desc, m.demangled_name.empty() ? m.mangled_name : m.demangled_name,
                                          threads, max_threads, variant, options_.block.has_value()));
  }
  // Unused globals the variant lacks (often compiler-made __unnamed_N strings): one line for all.
  std::vector<std::string> absent;
  for (size_t i = 0, g = 0; i < m.regions.size(); ++i) {
    const format::Region& reg = m.regions[i];
    if (reg.kind != MemKind::Global) continue;
    const std::optional<std::string>& name = bound[g++];
    CUdeviceptr addr = 0;
    size_t size = reg.size;
    if (!name) {
      absent.push_back(reg.global);
      KC_CU(cuMemAlloc(&addr, reg.size));
      img->scratch.push_back(addr);
    } else if (KC_CU_TRY(cuModuleGetGlobal(&addr, &size, img->module, name->c_str())) != CUDA_SUCCESS) {
      input_error(fmt::format("{} has no module global '{}' that the captured kernel's module had; a variant "
                              "must keep the module's __device__/__constant__ variables",
                              desc, *name));
    }
    if (size != reg.size)
      input_error(fmt::format("module global '{}' has {} bytes in {} but {} in the capture", name.value_or(reg.global),
                              size, desc, reg.size));
    img->globals.push_back(addr);
  }
  if (!absent.empty()) {
    constexpr size_t kNamed = 4;
    std::string names;
    for (size_t i = 0; i < absent.size() && i < kNamed; ++i) names += fmt::format("{}'{}'", i ? ", " : "", absent[i]);
    if (absent.size() > kNamed) names += fmt::format(" and {} more", absent.size() - kNamed);
    log::info("{} has no module global{} {} (not even under another translation unit's prefix) and the captured "
              "kernel does not use {}; {} captured bytes are restored to scratch memory",
              desc, absent.size() > 1 ? "s" : "", names, absent.size() > 1 ? "them" : "it",
              absent.size() > 1 ? "their" : "its");
  }
  std::unique_ptr<Image> out = std::move(img);  // the guard now holds nothing
  return out;
}

void Session::activate(Image& image) {
  const format::Manifest& m = capture_.manifest;
  RelocationMap& reloc = space_->relocations();
  reloc.drop_globals();
  for (size_t i = 0, g = 0; i < m.regions.size(); ++i) {
    const format::Region& r = m.regions[i];
    if (r.kind != MemKind::Global) continue;
    addresses_[i] = image.globals.at(g++);
    reloc.add({r.base, r.base + r.size, addresses_[i], true});
  }
  active_ = &image;
}

bool Session::load_variant(const VariantImage& image) {
  std::unique_ptr<Image> loaded = load_image(image.bytes, image.desc, true);  // throws: nothing changed
  const bool was_active = variant_ && active_ == variant_.get();
  if (was_active) active_ = nullptr;
  free_image(variant_);
  variant_ = std::move(loaded);
  if (!was_active) return false;
  activate(*variant_);
  return !variant_->globals.empty();
}

bool Session::use(Which which) {
  if (which == Which::Variant && !variant_) usage_error("no variant image is loaded into the session");
  if (which == Which::Captured && !captured_) captured_ = load_image(capture_.read_image(), "the captured image", false);
  Image& next = which == Which::Variant ? *variant_ : *captured_;
  if (&next == active_) return false;
  activate(next);
  // Each image has its own globals, holding its initial values or an earlier launch's.
  return !next.globals.empty();
}

bool Session::unload_variant() {
  if (!variant_) return false;
  const bool moved = use(Which::Captured);
  free_image(variant_);
  return moved;
}

std::vector<std::optional<std::string>> Session::bind_variant_globals(std::span<const uint8_t> variant_bytes,
                                                                     const std::string& desc) {
  const format::Manifest& m = capture_.manifest;
  const int sm = m.cc_major * 10 + m.cc_minor;
  const cubin::Image variant = cubin::parse_image(variant_bytes, sm);
  std::vector<ModuleGlobal> captured;
  for (const auto& r : m.regions)
    if (r.kind == MemKind::Global) captured.push_back({r.global, r.size, true});
  if (variant.code_kind != cubin::ImageKind::Cubin || captured.empty()) {
    // PTX lists no globals (names stay as captured); without captured globals nothing binds.
    std::vector<std::optional<std::string>> same;
    for (const auto& c : captured) same.emplace_back(c.name);
    return same;
  }
  // Which globals each kernel's code reaches; when the image cannot tell, all of them.
  const std::vector<uint8_t> image = capture_.read_image();
  const auto mark = [](std::vector<ModuleGlobal>& globals, const std::optional<std::vector<std::string>>& used) {
    if (!used) return;
    for (auto& g : globals) g.used = std::binary_search(used->begin(), used->end(), g.name);
  };
  mark(captured, cubin::globals_used(image, m.mangled_name, sm));
  std::vector<ModuleGlobal> in_variant;
  for (const auto& g : variant.globals) in_variant.push_back({g.name, g.size, true});
  mark(in_variant, cubin::globals_used(variant_bytes, m.mangled_name, sm));
  std::vector<std::optional<std::string>> bound = bind_globals(captured, in_variant, desc);
  size_t renamed = 0;
  for (size_t k = 0; k < bound.size(); ++k) renamed += bound[k] && *bound[k] != captured[k].name;
  if (renamed)
    log::info("{} of the module's globals are bound to {}'s by name without the translation-unit prefix", renamed,
              desc);
  return bound;
}

void Session::check_variant_layout(CUfunction function, const std::string& desc) {
  const format::Manifest& m = capture_.manifest;
  std::vector<format::ParamSlot> slots;
  for (size_t i = 0;; ++i) {
    size_t off = 0, size = 0;
    if (!driver().cuFuncGetParamInfo || driver().cuFuncGetParamInfo(function, i, &off, &size) != CUDA_SUCCESS) break;
    slots.push_back({static_cast<uint32_t>(off), static_cast<uint32_t>(size)});
  }
  if (slots.empty() || m.params.empty()) return;  // nothing to compare against
  auto describe = [](const std::vector<format::ParamSlot>& v) {
    std::string s;
    for (const auto& x : v) s += fmt::format("{}{}@{}", s.empty() ? "" : ", ", x.size, x.offset);
    return s;
  };
  if (slots.size() != m.params.size() ||
      !std::equal(slots.begin(), slots.end(), m.params.begin(),
                  [](auto& x, auto& y) { return x.offset == y.offset && x.size == y.size; }))
    input_error(fmt::format("{} changes the kernel's parameter layout (captured: [{}], variant: [{}] as "
                            "size@offset); a variant must keep the signature to replay the captured launch",
                            desc, describe(m.params), describe(slots)));
}

RestoreStats Session::restore() {
  const format::Manifest& m = capture_.manifest;
  const RelocationMap& reloc = space_->relocations();
  RestoreStats st;
  uint64_t total = 0;
  for (const auto& r : m.regions) total += r.size;
  uint64_t done = 0;
  const auto started = std::chrono::steady_clock::now();
  auto last = started;
  // Two staging buffers in turn: while the copy engine moves one piece to the device, the
  // pool decodes the next into the other. A buffer is refilled only after its copy ended.
  uint8_t* const staging[2] = {staging_a_, staging_b_};
  bool in_flight[2] = {false, false};
  size_t turn = 0;
  try {
    for (size_t i = 0; i < m.regions.size(); ++i) {
      const format::Region& r = m.regions[i];
      format::RegionBytes in(capture_, r);
      // The hash is checked on the first restore only: later ones read the same file. It is
      // the hash of the file, which a sparse region's reads pass on in file order.
      const bool verify = options_.verify_hashes && !verified_;
      std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> hash(verify ? XXH64_createState() : nullptr,
                                                                       &XXH64_freeState);
      if (hash) {
        XXH64_reset(hash.get(), 0);
        in.on_file_bytes = [&](const uint8_t* d, uint64_t n) { XXH64_update(hash.get(), d, n); };
      }
      RestorePlanOptions po;
      po.piece = staging_bytes_;
      // A filter stages what it may change; the rest of a fill stays a memset. A constant
      // filter's long ranges inside fills are memsets of the constant after the fill.
      ReachSplit reach;
      if (filter_ && filter_.reach) {
        const std::vector<ByteRange>& rs = filter_.reach->of(i);
        if (filter_.reach->constant) reach = split_reach(rs);
        else reach.staged = rs;
        po.staged = &reach.staged;
      } else {
        po.copy_everything = static_cast<bool>(filter_);
      }
      // Copy steps are gathered into one staging buffer until it is full, then read as one
      // batch (every chunk they need decoded side by side) and copied step by step.
      std::vector<format::RegionBytes::Piece> batch;
      std::vector<uint64_t> places;  // where each piece of the batch goes in the buffer
      uint64_t batch_bytes = 0;
      auto flush = [&] {
        if (batch.empty()) return;
        uint8_t* buf = staging[turn];
        auto t0 = std::chrono::steady_clock::now();
        const auto lap = [&t0](double& into) {
          const auto t = std::chrono::steady_clock::now();
          into += std::chrono::duration<double>(t - t0).count();
          t0 = t;
        };
        if (in_flight[turn]) KC_CU(cuEventSynchronize(staged_[turn]));
        lap(st.wait_s);
        for (size_t k = 0; k < batch.size(); ++k) batch[k].out = buf + places[k];
        in.read_pieces(batch);
        lap(st.read_s);
        // An array's texels are not pointers (and its region has no address). Relocation
        // reads every word, so the batch is split across the pool like the decode.
        if (r.kind != MemKind::Array && !reloc.empty()) {
          constexpr uint64_t kSlice = 4ull << 20;  // a multiple of 8: words stay whole
          std::vector<std::pair<size_t, uint64_t>> slices;  // (piece, offset in it)
          for (size_t k = 0; k < batch.size(); ++k)
            for (uint64_t o = 0; o < batch[k].size; o += kSlice) slices.emplace_back(k, o);
          std::atomic<uint64_t> words{0};
          pool::parallel_for(slices.size(), [&](size_t j) {
            const auto& p = batch[slices[j].first];
            const uint64_t o = slices[j].second;
            words += reloc.rewrite(p.out + o, std::min(kSlice, p.size - o), r.base + p.offset + o);
          });
          st.rewritten_words += words;
        }
        lap(st.rewrite_s);
        for (const auto& p : batch) {
          if (filter_) filter_(i, p.offset, p.out, p.size);
          KC_CU(cuMemcpyHtoDAsync(addresses_[i] + p.offset, p.out, p.size, stream_));
          st.copied += p.size;
        }
        KC_CU(cuEventRecord(staged_[turn], stream_));
        in_flight[turn] = true;
        turn ^= 1;
        batch.clear();
        places.clear();
        batch_bytes = 0;
      };
      const std::vector<RestoreStep> steps = plan_restore(in.segments(), r.base, r.size, po);
      for (const RestoreStep& step : steps) {
        const uint64_t off = step.offset, n = step.size;
        if (step.fill) {
          // Bytes a sparse capture did not store (zeros, or an omitted region's or a pruned
          // range's fill) hold no pointer, so they need no relocation.
          KC_CU(cuMemsetD8Async(addresses_[i] + off, *step.fill, n, stream_));
          st.filled += n;
        } else {
          const uint64_t at = (batch_bytes + 63) / 64 * 64;  // pieces start on 64-byte boundaries of the buffer
          if (at + n > staging_bytes_) flush();
          const uint64_t place = batch.empty() ? 0 : at;
          batch.push_back({off, n, nullptr});
          places.push_back(place);
          batch_bytes = place + n;
        }
        done += n;
        if (options_.progress && std::chrono::steady_clock::now() - last > std::chrono::seconds(1)) {
          last = std::chrono::steady_clock::now();
          log::info("restoring: {} of {}", human_bytes(done), human_bytes(total));
        }
      }
      flush();
      if (filter_ && filter_.reach && filter_.reach->constant)
        for (const RestoreStep& o : overlay_fills(steps, reach.memset, *filter_.reach->constant)) {
          KC_CU(cuMemsetD8Async(addresses_[i] + o.offset, *o.fill, o.size, stream_));  // after the step's fill
          st.overlaid += o.size;
        }
      if (hash && r.xxh64 != 0 && XXH64_digest(hash.get()) != r.xxh64)  // 0: not recorded
        input_error(fmt::format("capture file {} (BEFORE memory of region {}) does not match the hash the capture "
                                "recorded: the file was changed or damaged after the capture; extract again",
                                r.file, r.id));
      st.bytes += r.size;
    }
    KC_CU(cuStreamSynchronize(stream_));
  } catch (...) {
    // No copy may still read a staging buffer (or write the device) once restore has left.
    driver().cuStreamSynchronize(stream_);
    throw;
  }
  verified_ = true;
  launched_ = false;
  ++generation_;
  // Parameters: rewrite a fresh copy each time (restore may be called again).
  // (param_ptrs_ point into params_, so its storage must stay where it is.)
  std::vector<uint8_t> fresh = capture_.read(m.params_file, "parameter bytes");
  std::memcpy(params_.data(), fresh.data(), std::min(fresh.size(), params_.size()));
  st.rewritten_words += reloc.rewrite(params_.data(), params_.size(), 0);
  // The arrays hold what their regions now hold; the parameters name the new objects.
  textures_.upload();
  textures_.patch(params_);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  log::debug("restore: {:.3f} s; {} staged and copied, {} memset, {} of a filter's constant memset over fills",
             st.seconds, human_bytes(st.copied), human_bytes(st.filled), human_bytes(st.overlaid));
  return st;
}

void Session::enqueue() {
  const format::Manifest& m = capture_.manifest;
  CUlaunchConfig cfg{};
  const auto& grid = options_.grid ? *options_.grid : m.grid;
  const auto& block = options_.block ? *options_.block : m.block;
  set_launch_dims(cfg, grid, block);
  cfg.sharedMemBytes = m.shared_mem_bytes;
  cfg.hStream = stream_;
  cfg.attrs = attrs_.empty() ? nullptr : attrs_.data();
  cfg.numAttrs = static_cast<unsigned>(attrs_.size());
  size_t param_size = params_.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params_.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &param_size,
                   CU_LAUNCH_PARAM_END};
  const bool use_extra = m.params.empty() && !params_.empty();
  KC_CU(cuLaunchKernelEx(&cfg, active_->function, use_extra ? nullptr : param_ptrs_.data(), use_extra ? extra : nullptr));
  launched_ = true;
  ++generation_;
}

UniformCheck* Session::uniform_check() {
  if (!uniform_tried_) {
    uniform_tried_ = true;
    std::string why;
    uniform_ = UniformCheck::create(&why);
    if (!uniform_) log::info("comparing on the host only: {}", why);
  }
  return uniform_.get();
}

void Session::make_current() const {
  if (ctx_) KC_CU(cuCtxSetCurrent(ctx_));
}

void Session::synchronize() {
  CUresult r = KC_CU_TRY(cuStreamSynchronize(stream_));
  if (r != CUDA_SUCCESS)
    device_error(cu_error_text(r, "the replayed kernel", __FILE__, __LINE__) +
                 " (the kernel faulted: memory it touches may not be in the capture; try `make sanitize`)");
  textures_.download();  // what surfaces wrote, where comparison reads it
}

float Session::launch() {
  KC_CU(cuEventRecord(ev_start_, stream_));
  enqueue();
  KC_CU(cuEventRecord(ev_stop_, stream_));
  synchronize();
  float ms = 0;
  KC_CU(cuEventElapsedTime(&ms, ev_start_, ev_stop_));
  return ms;
}

}  // namespace kerncap::replay
