#include "replay/window_replay.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/launch_dims.hpp"
#include "common/log.hpp"
#include "cubin/cubin.hpp"
#include "names/demangle.hpp"
#include "replay/kernel_clock.hpp"
#include "replay/spin_kernel.hpp"
#include "replay/state_reset.hpp"
#include "replay/timing.hpp"
#include "replay/window_pieces.hpp"

#include <xxhash.h>

namespace kerncap::replay {
namespace {

using Kind = format::WindowOp::Kind;

CUmodule window_load_module(std::vector<uint8_t> bytes, const std::string& desc) {
  if (cubin::detect_kind(bytes) == cubin::ImageKind::Ptx) bytes.push_back(0);  // PTX text must end in NUL
  CUmodule mod = nullptr;
  const CUresult r = KC_CU_TRY(cuModuleLoadData(&mod, bytes.data()));
  if (r != CUDA_SUCCESS)
    device_error(cu_error_text(r, fmt::format("cuModuleLoadData({})", desc).c_str(), __FILE__, __LINE__) +
                 "; was it built for this GPU's architecture?");
  return mod;
}

double window_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

CUfunction WindowReplay::function_in(CUmodule module, const std::string& name, const std::string& desc) {
  CUfunction f = nullptr;
  const CUresult r = KC_CU_TRY(cuModuleGetFunction(&f, module, name.c_str()));
  if (r != CUDA_SUCCESS) input_error(fmt::format("{} has no kernel {} (the window's operation needs it)", desc, name));
  return f;
}

WindowReplay::WindowReplay(Session& s, format::Window window, const std::map<size_t, VariantImage>& swaps,
                           const Replacement* replacement)
    : s_(s), window_(std::move(window)) {
  if (replacement) {
    if (replacement->to >= window_.ops.size() || replacement->from > replacement->to)
      usage_error(fmt::format("--replace {}..{}: the window has operations 0 to {}", replacement->from,
                              replacement->to, window_.ops.size() - 1));
    for (const auto& [op, image] : swaps)
      if (op >= replacement->from && op <= replacement->to)
        usage_error(fmt::format("--swap {} falls inside --replace {}..{}: an operation is either swapped or replaced",
                                op, replacement->from, replacement->to));
    std::string why;
    if (!window_.one_stream_run(replacement->from, replacement->to, &why))
      usage_error(fmt::format("--replace {}..{}: {}", replacement->from, replacement->to, why));
    replacement_ = *replacement;
  }
  const format::Capture& cap = s_.capture();
  const format::Manifest& m = cap.manifest;
  // The window's first kernel launch is the capture's own (op 0; in a graph launch's window
  // memsets or copies may come before it).
  const auto first_kernel = std::find_if(window_.ops.begin(), window_.ops.end(),
                                         [](const format::WindowOp& o) { return o.kind == Kind::Kernel; });
  if (first_kernel == window_.ops.end() || first_kernel->image_hash != m.image_hash ||
      first_kernel->mangled != m.mangled_name)
    input_error("window.json does not begin with the capture's own launch (its kernel and image): the window "
                "capture is damaged or crafted; extract it again");
  for (const auto& [op, image] : swaps) {
    if (op >= window_.ops.size())
      usage_error(fmt::format("--swap {}: the window has operations 0 to {}", op, window_.ops.size() - 1));
    if (window_.ops[op].kind != Kind::Kernel)
      usage_error(fmt::format("--swap {}: operation {} is a {}, not a kernel launch", op, op, to_string(window_.ops[op].kind)));
  }
  s_.use(Session::Which::Captured);
  s_.make_current();
  CUmodule own = nullptr;
  KC_CU(cuFuncGetModule(&own, s_.function()));
  std::map<uint64_t, CUmodule> by_hash{{m.image_hash, own}};
  kernels_.resize(window_.ops.size());
  try {
    for (size_t i = 0; i < window_.ops.size(); ++i) {
      const format::WindowOp& op = window_.ops[i];
      // Its replacement runs instead; a caller's replacement may still run it (enqueue_captured).
      if (replaced(i) && !kept(i) && !replacement_->call) continue;
      if (op.kind == Kind::CopyH2D) {
        // Pinned, so that the copy is asynchronous on the stream as the application's was.
        const std::vector<uint8_t> bytes = cap.read(format::window_h2d_file(i), "a host-to-device copy's bytes");
        if (bytes.size() != op.bytes)
          input_error(fmt::format("{} has {} bytes, window.json says {}: the window capture is damaged",
                                  format::window_h2d_file(i), bytes.size(), op.bytes));
        if (!bytes.empty()) {
          KC_CU(cuMemAllocHost(&kernels_[i].host, bytes.size()));
          std::memcpy(kernels_[i].host, bytes.data(), bytes.size());
        }
        continue;
      }
      if (op.kind != Kind::Kernel) continue;
      Kernel& k = kernels_[i];
      if (const auto sw = swaps.find(i); sw != swaps.end()) {
        const std::string name = kernel_in_variant(sw->second.bytes, sw->second.desc, op.mangled);
        modules_.push_back(window_load_module(sw->second.bytes, sw->second.desc));
        k.function = function_in(modules_.back(), name, sw->second.desc);
        k.swapped = true;
        notes_.push_back(fmt::format("operation {} ({}) runs {} (its module globals, if any, start at their "
                                     "load-time values)",
                                     i, names::demangle(op.mangled), sw->second.desc));
      } else {
        auto it = by_hash.find(op.image_hash);
        if (it == by_hash.end()) {
          const std::string rel = format::window_image_file(op.image_hash, op.image_kind);
          std::vector<uint8_t> bytes = cap.read(rel, "a window kernel's code image");
          if (image_hash(bytes) != op.image_hash)
            input_error(fmt::format("{} does not match its hash: the window capture is damaged; extract it again", rel));
          modules_.push_back(window_load_module(std::move(bytes), rel));
          it = by_hash.emplace(op.image_hash, modules_.back()).first;
        }
        k.function = function_in(it->second, op.mangled, format::window_image_file(op.image_hash, op.image_kind));
        if (!op.uncaptured_globals.empty())
          notes_.push_back(fmt::format("operation {} ({}): its module's globals ({}{}) are not in the capture and "
                                       "start at their load-time values",
                                       i, names::demangle(op.mangled), op.uncaptured_globals[0],
                                       op.uncaptured_globals.size() > 1 ? ", ..." : ""));
      }
      for (const auto& fa : op.func_attrs)
        if (settable_function_attribute(fa.id))
          KC_CU(cuFuncSetAttribute(k.function, static_cast<CUfunction_attribute>(fa.id), fa.value));
      if (op.shared_mem_bytes > 48 * 1024)
        KC_CU(cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(op.shared_mem_bytes)));
      for (const auto& la : op.launch_attrs) {
        if (!replayable_launch_attribute(la.id)) continue;
        CUlaunchAttribute at{};
        at.id = static_cast<CUlaunchAttributeID>(la.id);
        std::memcpy(&at.value, la.raw.data(), std::min(la.raw.size(), sizeof(at.value)));
        k.attrs.push_back(at);
      }
      if (op.cooperative && std::none_of(k.attrs.begin(), k.attrs.end(),
                                         [](const CUlaunchAttribute& a) { return a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE; })) {
        CUlaunchAttribute at{};
        at.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        at.value.cooperative = 1;
        k.attrs.push_back(at);
      }
      k.params = cap.read(format::window_params_file(i), "a window kernel's parameters");
      if (k.params.size() != op.params_size)
        input_error(fmt::format("{} has {} bytes, window.json says {}: the window capture is damaged",
                                format::window_params_file(i), k.params.size(), op.params_size));
    }
    if (replacement_) load_replacement(*replacement_);
    create_streams();
  } catch (...) {
    release_streams();
    for (CUmodule mod : modules_) KC_CU_TRY(cuModuleUnload(mod));
    modules_.clear();
    for (Kernel& k : kernels_)
      if (k.host) KC_CU_TRY(cuMemFreeHost(k.host));
    throw;
  }
  relocate();
}

WindowReplay::~WindowReplay() {
  release_streams();
  for (Kernel& k : kernels_)
    if (k.host) KC_CU_TRY(cuMemFreeHost(k.host));
  for (CUmodule mod : modules_)
    if (const CUresult r = KC_CU_TRY(cuModuleUnload(mod)); r != CUDA_SUCCESS)
      log::warn("{}", cu_error_text(r, "cuModuleUnload", __FILE__, __LINE__));
}

void WindowReplay::create_streams() {
  // The window's other streams and its events, created once: every enqueue forks the other
  // streams from the caller's stream and joins them back into it, so a caller (timing, last
  // writers, the judge) sees the window as one unit of work on its stream.
  for (uint32_t i = 1; i < window_.streams; ++i) {
    side_.push_back(nullptr);
    KC_CU(cuStreamCreate(&side_.back(), CU_STREAM_NON_BLOCKING));
  }
  for (uint32_t i = 0; i < window_.events; ++i) {
    events_.push_back(nullptr);
    KC_CU(cuEventCreate(&events_.back(), CU_EVENT_DISABLE_TIMING));
  }
  if (side_.empty()) return;
  KC_CU(cuEventCreate(&fork_, CU_EVENT_DISABLE_TIMING));
  for (size_t i = 0; i < side_.size(); ++i) {
    joins_.push_back(nullptr);
    KC_CU(cuEventCreate(&joins_.back(), CU_EVENT_DISABLE_TIMING));
  }
  if (window_.streams > 1)
    notes_.push_back(fmt::format("the window's operations run on {} streams joined by its {} event(s), as the "
                                 "application's did",
                                 window_.streams, window_.events));
}

void WindowReplay::release_streams() {
  for (CUstream& st : side_)
    if (st) KC_CU_TRY(cuStreamDestroy(st));
  for (CUevent& e : events_)
    if (e) KC_CU_TRY(cuEventDestroy(e));
  for (CUevent& e : joins_)
    if (e) KC_CU_TRY(cuEventDestroy(e));
  if (fork_) KC_CU_TRY(cuEventDestroy(fork_));
  side_.clear();
  events_.clear();
  joins_.clear();
  fork_ = nullptr;
}

CUstream WindowReplay::stream_of(CUstream stream, size_t op) const {
  const uint32_t k = window_.ops[op].stream;
  return k == 0 || k > side_.size() ? stream : side_[k - 1];
}

void WindowReplay::load_replacement(const Replacement& r) {
  if (r.call) {
    notes_.push_back(fmt::format("operations {} to {} are replaced by {}", r.from, r.to, r.call_name));
    return;
  }
  for (const auto& l : r.launches) {
    if (l.op) {  // the captured operation, loaded with the others
      new_launches_.emplace_back();
      continue;
    }
    const VariantImage image = read_variant_image(l.image);
    const std::string name = kernel_in_variant(image.bytes, image.desc, l.kernel);
    modules_.push_back(window_load_module(image.bytes, image.desc));
    NewLaunch n;
    n.function = function_in(modules_.back(), name, image.desc);
    if (l.shared_mem_bytes > 48 * 1024)
      KC_CU(cuFuncSetAttribute(n.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(l.shared_mem_bytes)));
    new_launches_.push_back(std::move(n));
  }
  notes_.push_back(fmt::format("operations {} to {} are replaced by {} launch(es) ({})", r.from, r.to,
                               r.launches.size(), r.spec.empty() ? std::string("--replace") : r.spec));
}

void WindowReplay::relocate() {
  for (size_t i = 0; i < kernels_.size(); ++i) {
    Kernel& k = kernels_[i];
    if (!k.function) continue;
    k.relocated = k.params;
    s_.relocations().rewrite(k.relocated.data(), k.relocated.size(), 0);
    k.ptrs.clear();
    for (const auto& slot : window_.ops[i].params) k.ptrs.push_back(k.relocated.data() + slot.offset);
  }
  if (!replacement_) return;
  // Pointers to regions where this replay placed them.
  const format::Manifest& m = s_.capture().manifest;
  std::map<uint32_t, size_t> index;
  for (size_t i = 0; i < m.regions.size(); ++i) index[m.regions[i].id] = i;
  for (size_t j = 0; j < new_launches_.size(); ++j) {
    NewLaunch& n = new_launches_[j];
    if (replacement_->launches[j].op) continue;
    std::vector<format::ParamSlot> slots;
    n.params = pack_replacement_args(replacement_->launches[j].args,
                                     [&](uint32_t id) { return s_.address(index.at(id)); }, &slots);
    n.ptrs.clear();
    for (const auto& slot : slots) n.ptrs.push_back(n.params.data() + slot.offset);
  }
}

bool WindowReplay::kept(size_t op) const {
  if (!replaced(op)) return false;
  for (const auto& l : replacement_->launches)
    if (l.op == op) return true;
  return false;
}

size_t WindowReplay::kernels_at(size_t op) const {
  if (op >= window_.ops.size()) return 0;
  if (replaced(op)) {
    if (op != replacement_->from) return 0;
    if (replacement_->call) return 1;  // the caller's launches: at least one kernel, presumably
    size_t n = 0;
    for (const auto& l : replacement_->launches) n += l.op ? window_.ops[*l.op].kind == Kind::Kernel : 1;
    return n;
  }
  return window_.ops[op].kind == Kind::Kernel;
}

void WindowReplay::enqueue(CUstream caller, size_t begin, size_t end) {
  if (!side_.empty()) {  // the other streams start after what the caller queued before
    KC_CU(cuEventRecord(fork_, caller));
    for (CUstream st : side_) KC_CU(cuStreamWaitEvent(st, fork_, 0));
  }
  for (size_t i = begin; i < end && i < window_.ops.size(); ++i) {
    if (!replaced(i)) {
      enqueue_op(stream_of(caller, i), i);
      continue;
    }
    if (i != replacement_->from) continue;  // the replacement runs once, at its first operation
    const CUstream stream = stream_of(caller, i);  // the replaced run's stream (one: checked)
    if (replacement_->call) {
      replacement_->call(stream);
      continue;
    }
    for (size_t j = 0; j < new_launches_.size(); ++j) {
      const ReplacementLaunch& l = replacement_->launches[j];
      if (l.op) {
        enqueue_op(stream, *l.op);
        continue;
      }
      NewLaunch& n = new_launches_[j];
      const CUresult r = KC_CU_TRY(cuLaunchKernel(n.function, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                                                  l.block[2], l.shared_mem_bytes, stream,
                                                  n.ptrs.empty() ? nullptr : n.ptrs.data(), nullptr));
      if (r != CUDA_SUCCESS)
        device_error(cu_error_text(r, fmt::format("launching the replacement's launch {} ({})", j, l.kernel).c_str(),
                                   __FILE__, __LINE__));
    }
  }
  for (size_t k = 0; k < side_.size(); ++k) {  // and the caller's stream waits for all of them
    KC_CU(cuEventRecord(joins_[k], side_[k]));
    KC_CU(cuStreamWaitEvent(caller, joins_[k], 0));
  }
}

void WindowReplay::enqueue_captured(CUstream stream, size_t op) {
  // `stream` is the one the callable was given: the replaced run's (one stream, checked).
  if (!replacement_ || !replacement_->call || op < replacement_->from || op > replacement_->to)
    usage_error(fmt::format("operation {} as captured: only an operation of the run a callable replaces can be run "
                            "from inside it",
                            op));
  enqueue_op(stream, op);
}

void WindowReplay::enqueue_op(CUstream stream, size_t i) {
  const format::WindowOp& op = window_.ops[i];
  switch (op.kind) {
    case Kind::Kernel: {
      Kernel& k = kernels_[i];
      CUlaunchConfig cfg{};
      set_launch_dims(cfg, op.grid, op.block);
      cfg.sharedMemBytes = op.shared_mem_bytes;
      cfg.hStream = stream;
      cfg.attrs = k.attrs.empty() ? nullptr : k.attrs.data();
      cfg.numAttrs = static_cast<unsigned>(k.attrs.size());
      size_t size = k.relocated.size();
      void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, k.relocated.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                       CU_LAUNCH_PARAM_END};
      const bool use_extra = op.params.empty() && !k.relocated.empty();
      const CUresult r = KC_CU_TRY(cuLaunchKernelEx(&cfg, k.function, use_extra ? nullptr : k.ptrs.data(),
                                                    use_extra ? extra : nullptr));
      if (r != CUDA_SUCCESS)
        device_error(cu_error_text(r, fmt::format("launching {}", describe(i)).c_str(), __FILE__, __LINE__));
      break;
    }
    case Kind::Memset: {
      const CUdeviceptr dst = s_.translate(op.dst);
      if (op.element_size == 1) KC_CU(cuMemsetD8Async(dst, static_cast<unsigned char>(op.value), op.width, stream));
      else if (op.element_size == 2)
        KC_CU(cuMemsetD16Async(dst, static_cast<unsigned short>(op.value), op.width, stream));
      else KC_CU(cuMemsetD32Async(dst, op.value, op.width, stream));
      break;
    }
    case Kind::CopyD2D:
      KC_CU(cuMemcpyDtoDAsync(s_.translate(op.dst), s_.translate(op.src), op.bytes, stream));
      break;
    case Kind::CopyH2D:
      if (op.bytes) KC_CU(cuMemcpyHtoDAsync(s_.translate(op.dst), kernels_[i].host, op.bytes, stream));
      break;
    case Kind::EventRecord: KC_CU(cuEventRecord(events_.at(op.event), stream)); break;
    case Kind::EventWait: KC_CU(cuStreamWaitEvent(stream, events_.at(op.event), 0)); break;
  }
}

WindowTiming WindowReplay::time(int warmup, int iterations) {
  if (iterations < 1) usage_error("the window is timed over at least one iteration");
  WindowTiming t;
  t.iterations = iterations;
  // The kernels, by the one timing engine: warm and cold, not --cache auto, whose probe compares
  // with the first launch's in-app time (not the window's).
  size_t kernels = 0;
  for (size_t i = 0; i < window_.ops.size(); ++i) kernels += kernels_at(i);
  if (kernels) {
    s_.restore();
    TimingOptions o;
    o.warmup = warmup;
    o.iterations = iterations;
    const LaunchFn launch = [this](CUstream st) { enqueue(st); };
    o.cache = CacheMode::Warm;
    const Timing warm = time_launches(s_, o, launch);
    o.cache = CacheMode::Cold;
    const Timing cold = time_launches(s_, o, launch);
    t.kernels_warm_ms = warm.stats.median;
    t.kernels_cold_ms = cold.stats.median;
    t.kernels_method = warm.method;
    CacheChoice c{CacheMode::Warm, "warm: the window's operations run back to back, each on data the one before "
                                   "left in L2"};
    if (window_.in_app_kernels_ns && *window_.in_app_kernels_ns)
      c = nearer_cache(static_cast<double>(*window_.in_app_kernels_ns), warm.stats.median * 1e6,
                       cold.stats.median * 1e6, c);
    t.cache = to_string(c.mode);
    t.cache_why = c.why;
    // nearer_cache speaks of one launch; here it is the window's kernels.
    const std::string shape = "of this launch shape";
    if (const size_t at = t.cache_why.find(shape); at != std::string::npos)
      t.cache_why.replace(at, shape.size(), "of the window's kernels");
    t.kernels_ms = c.mode == CacheMode::Cold ? cold.stats.median : warm.stats.median;
  }
  s_.restore();
  time_span(t, warmup, iterations);
  s_.restore();
  time_ops(t, warmup, iterations);
  return t;
}

namespace {

// Spin long enough for the host to queue every operation and the events behind the spin
// kernel: twice the longest enqueue seen so far, at least 20 µs, at most 100 ms.
uint64_t window_spin_ns(uint64_t enqueue_ns) { return std::clamp<uint64_t>(2 * enqueue_ns + 20000, 20000, 100000000); }

}  // namespace

void WindowReplay::time_span(WindowTiming& t, int warmup, int iterations) {
  const StateReset reset(s_);
  const SpinKernel spin;
  const size_t n = window_.ops.size();
  std::vector<CUevent> ev(n + 1, nullptr);
  std::vector<std::vector<double>> per_op(n);
  std::vector<double> whole;
  uint64_t enqueue_ns = 0;
  auto enqueue_timed = [&](const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
    enqueue_ns = std::max<uint64_t>(enqueue_ns, static_cast<uint64_t>(took.count()));
  };
  try {
    for (auto& e : ev) KC_CU(cuEventCreate(&e, CU_EVENT_DEFAULT));
    const CUstream st = s_.stream();
    // An untimed run first: the enqueue time sizes the spin.
    reset.reset(st);
    enqueue_timed([&] { enqueue(st); });
    s_.synchronize();
    for (int it = 0; it < warmup + iterations; ++it) {
      // The span: events only around the whole window.
      reset.reset(st);
      spin.enqueue(st, window_spin_ns(enqueue_ns));
      enqueue_timed([&] {
        KC_CU(cuEventRecord(ev[0], st));
        enqueue(st);
        KC_CU(cuEventRecord(ev[n], st));
      });
      s_.synchronize();
      float span = 0;
      KC_CU(cuEventElapsedTime(&span, ev[0], ev[n]));
      // Each operation between events (for memsets and copies, which CUPTI's kernel records miss).
      reset.reset(st);
      spin.enqueue(st, window_spin_ns(enqueue_ns));
      enqueue_timed([&] {
        for (size_t i = 0; i < n; ++i) {
          KC_CU(cuEventRecord(ev[i], st));
          enqueue(st, i, i + 1);
        }
        KC_CU(cuEventRecord(ev[n], st));
      });
      s_.synchronize();
      if (it < warmup) continue;
      whole.push_back(span);
      for (size_t i = 0; i < n; ++i) {
        float ms = 0;
        KC_CU(cuEventElapsedTime(&ms, ev[i], ev[i + 1]));
        per_op[i].push_back(ms);
      }
    }
    reset.reset(st);
    s_.synchronize();
  } catch (...) {
    for (auto& e : ev)
      if (e) KC_CU_TRY(cuEventDestroy(e));
    throw;
  }
  for (auto& e : ev) KC_CU_TRY(cuEventDestroy(e));
  t.window_ms = window_median(whole);
  t.op_ms.clear();
  // An operation of a replaced run after its first runs nothing of its own: no time (0).
  for (size_t i = 0; i < n; ++i) t.op_ms.push_back(replaced(i) && i != replacement_->from ? 0.0 : window_median(per_op[i]));
  t.op_method = kMethodEvents;
  if (t.kernels_method.empty()) {  // no kernel at all: the operations' events
    t.kernels_method = kMethodEvents;
    t.cache = "warm";
  }
}

void WindowReplay::time_ops(WindowTiming& t, int warmup, int iterations) {
  // A kernel's own GPU time: the operations run one at a time (the host waits for each), each
  // kernel's CUPTI record taken. The previous operation's data is in L2, as in the application.
  KernelClock kc;
  if (!kc.ok()) return;  // op_ms stays the events'
  const StateReset reset(s_);
  const size_t n = window_.ops.size();
  std::vector<std::vector<double>> per_op(n);
  const CUstream st = s_.stream();
  bool complete = true;
  for (int it = 0; it < warmup + iterations && complete; ++it) {
    reset.reset(st);
    s_.synchronize();
    for (size_t i = 0; i < n && complete; ++i) {
      const size_t k = kernels_at(i);
      if (!k) {
        enqueue(st, i, i + 1);
        continue;
      }
      const uint64_t since = kc.now();
      enqueue(st, i, i + 1);
      s_.synchronize();
      const KernelSum sum = kc.take(since, k);
      complete = sum.kernels >= k;
      if (it >= warmup) per_op[i].push_back(static_cast<double>(sum.ns) / 1e6);
    }
    s_.synchronize();
  }
  reset.reset(st);
  s_.synchronize();
  if (!complete) return;  // a record missing: the events' times stay
  for (size_t i = 0; i < n; ++i)
    if (!per_op[i].empty()) t.op_ms[i] = window_median(per_op[i]);
  t.op_method = "cupti-activity, one operation at a time (memsets and copies: cuda-events)";
}

std::map<uint32_t, std::vector<uint64_t>> WindowReplay::last_writer_cuts(const std::vector<uint32_t>& regions,
                                                                         uint64_t max_span, uint64_t max_copy) {
  const format::Manifest& m = s_.capture().manifest;
  struct Watched {
    uint32_t id;
    size_t index;
    uint64_t lo = UINT64_MAX, hi = 0;  // the changed span, region-relative
    std::vector<std::pair<uint64_t, uint64_t>> runs;
    std::optional<LastWriters> writers;
  };
  std::vector<Watched> watched;
  const uint64_t ops = std::max<uint64_t>(window_.ops.size(), 1);
  uint64_t span_total = 0;
  for (uint32_t id : regions)
    for (size_t i = 0; i < m.regions.size(); ++i) {
      if (m.regions[i].id != id || m.regions[i].kind == format::MemKind::Global ||
          m.regions[i].kind == format::MemKind::Array)
        continue;
      Watched w{id, i};
      for (const auto& a : m.after)
        if (a.region == id && a.size) {
          w.runs.emplace_back(a.offset, a.size);
          w.lo = std::min(w.lo, a.offset);
          w.hi = std::max(w.hi, a.offset + a.size);
        }
      if (w.runs.empty() || w.hi > m.regions[i].size) continue;
      const uint64_t span = w.hi - w.lo;
      if (span_total + span > max_span || (span_total + span) > max_copy / ops) continue;
      span_total += span;
      std::sort(w.runs.begin(), w.runs.end());
      watched.push_back(std::move(w));
    }
  std::map<uint32_t, std::vector<uint64_t>> out;
  if (watched.empty()) return out;
  s_.restore();
  std::vector<uint8_t> buf;
  auto read = [&](const Watched& w) {
    buf.resize(w.hi - w.lo);
    KC_CU(cuMemcpyDtoH(buf.data(), s_.address(w.index) + w.lo, buf.size()));
  };
  for (auto& w : watched) {
    read(w);
    w.writers.emplace(w.lo, buf);
  }
  for (size_t op = 0; op < window_.ops.size(); ++op) {
    enqueue(s_.stream(), op, op + 1);
    s_.synchronize();
    for (auto& w : watched) {
      read(w);
      w.writers->after(static_cast<int32_t>(op), buf);
    }
  }
  for (auto& w : watched) {
    const std::vector<WriterStretch> stretches = w.writers->stretches(w.runs);
    if (!stretches.empty()) out[w.id] = writer_cuts(stretches);
  }
  return out;
}

std::map<uint32_t, size_t> WindowReplay::last_writers(const std::vector<uint32_t>& regions, uint64_t max_bytes) {
  const format::Manifest& m = s_.capture().manifest;
  struct Watched {
    uint32_t id;
    size_t index;
    uint64_t size;
    uint64_t hash = 0;
  };
  std::vector<Watched> watched;
  uint64_t total = 0;
  for (uint32_t id : regions)
    for (size_t i = 0; i < m.regions.size(); ++i)
      if (m.regions[i].id == id && m.regions[i].kind != format::MemKind::Global &&
          m.regions[i].kind != format::MemKind::Array && total + m.regions[i].size <= max_bytes) {
        watched.push_back({id, i, m.regions[i].size});
        total += m.regions[i].size;
      }
  std::map<uint32_t, size_t> out;
  if (watched.empty()) return out;
  s_.restore();
  std::vector<uint8_t> buf;
  auto hash_all = [&] {
    for (auto& w : watched) {
      buf.resize(w.size);
      KC_CU(cuMemcpyDtoH(buf.data(), s_.address(w.index), w.size));
      w.hash = XXH3_64bits(buf.data(), buf.size());
    }
  };
  hash_all();
  for (size_t op = 0; op < window_.ops.size(); ++op) {
    std::vector<uint64_t> before;
    for (const auto& w : watched) before.push_back(w.hash);
    enqueue(s_.stream(), op, op + 1);
    s_.synchronize();
    hash_all();
    for (size_t j = 0; j < watched.size(); ++j)
      if (watched[j].hash != before[j]) out[watched[j].id] = op;
  }
  return out;
}

std::string WindowReplay::describe(size_t op) const {
  if (op >= window_.ops.size()) return fmt::format("op {}", op);
  if (replaced(op) && replacement_->call)
    return fmt::format("the replacement of ops {}..{} ({})", replacement_->from, replacement_->to,
                       replacement_->call_name);
  if (replaced(op)) {
    std::string names;
    for (const auto& l : replacement_->launches)
      names += (names.empty() ? "" : ", ") + (l.op ? fmt::format("op {} as captured", *l.op) : l.kernel);
    return fmt::format("the replacement of ops {}..{} ({} launch(es): {})", replacement_->from, replacement_->to,
                       replacement_->launches.size(), names);
  }
  const format::WindowOp& o = window_.ops[op];
  const std::string on = o.stream ? fmt::format(" (stream {})", o.stream) : std::string();
  switch (o.kind) {
    case Kind::Kernel:
      return fmt::format("op {} {}{}{}", op, names::demangle(o.mangled), kernels_[op].swapped ? " (swapped)" : "", on);
    case Kind::Memset:
      return fmt::format("op {} memset {} x{} of {:#x} at {}{}", op, o.width, o.element_size, o.value, hex_addr(o.dst), on);
    case Kind::CopyD2D: return fmt::format("op {} copy {} B {} -> {}{}", op, o.bytes, hex_addr(o.src), hex_addr(o.dst), on);
    case Kind::CopyH2D: return fmt::format("op {} copy {} B host -> {}{}", op, o.bytes, hex_addr(o.dst), on);
    case Kind::EventRecord: return fmt::format("op {} event {} recorded on stream {}", op, o.event, o.stream);
    case Kind::EventWait: return fmt::format("op {} stream {} waits on event {}", op, o.stream, o.event);
  }
  return fmt::format("op {}", op);
}

WindowKeptBytes::WindowKeptBytes(Session& s, WindowReplay& captured, std::vector<KeptRange> ranges)
    : s_(s), ranges_(std::move(ranges)) {
  for (const auto& r : ranges_) bytes_ += r.size;
  if (!bytes_) return;
  KC_CU(cuMemAlloc(&scratch_, bytes_));
  try {
    s_.restore();
    captured.enqueue(s_.stream());
    uint64_t at = 0;
    for (const auto& r : ranges_) {
      KC_CU(cuMemcpyDtoDAsync(scratch_ + at, s_.address(r.region) + r.offset, r.size, s_.stream()));
      at += r.size;
    }
    s_.synchronize();
    s_.restore();
  } catch (...) {
    KC_CU_TRY(cuMemFree(scratch_));
    throw;
  }
}

WindowKeptBytes::~WindowKeptBytes() {
  if (scratch_) KC_CU_TRY(cuMemFree(scratch_));
}

void WindowKeptBytes::put_back(CUstream stream) const {
  uint64_t at = 0;
  for (const auto& r : ranges_) {
    KC_CU(cuMemcpyDtoDAsync(s_.address(r.region) + r.offset, scratch_ + at, r.size, stream));
    at += r.size;
  }
}

}  // namespace kerncap::replay
