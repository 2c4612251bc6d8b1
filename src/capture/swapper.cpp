#include "capture/swapper.hpp"

#include <chrono>

#include <fmt/format.h>

#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "common/log.hpp"

namespace kerncap::capture {

std::string layout_mismatch(const std::vector<format::ParamSlot>& app, const std::vector<format::ParamSlot>& variant) {
  if (app.empty() || variant.empty()) return "";
  if (app.size() != variant.size())
    return fmt::format("the application's kernel takes {} parameters, the variant {}", app.size(), variant.size());
  for (size_t i = 0; i < app.size(); ++i)
    if (app[i].offset != variant[i].offset || app[i].size != variant[i].size)
      return fmt::format("parameter {} is {} bytes at offset {} in the application's kernel, {} bytes at offset {} in "
                         "the variant",
                         i, app[i].size, app[i].offset, variant[i].size, variant[i].offset);
  return "";
}

Swapper::Swapper(std::vector<format::SwapSpec> specs, SwapDriver& driver, ShadowDriver* shadow)
    : driver_(driver), shadow_(shadow) {
  for (auto& s : specs) {
    auto k = std::make_unique<Kernel>();
    k->spec = std::move(s);
    kernels_.push_back(std::move(k));
  }
}

std::vector<CUpti_CallbackId> Swapper::callback_ids() {
  std::vector<CUpti_CallbackId> ids = launch_callback_ids();
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode, CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2,
        CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams, CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode,
        CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetParams,
        CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams, CUPTI_DRIVER_TRACE_CBID_cuModuleUnload,
        CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy,
        CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset,
        CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2})
    ids.push_back(id);
  return ids;
}

Swapper::Handle Swapper::handle_of(CUfunction f) {
  {
    std::shared_lock lk(handles_mu_);
    if (auto it = handles_.find(f); it != handles_.end()) return it->second;
  }
  const std::string name = driver_.name_of(f);
  Handle h;
  for (size_t i = 0; i < kernels_.size(); ++i)
    if (!name.empty() && name == kernels_[i]->spec.kernel) h.index = static_cast<int>(i);
  std::unique_lock lk(handles_mu_);
  return handles_.emplace(f, h).first->second;
}

int Swapper::kernel_index(CUfunction f) { return handle_of(f).index; }

void Swapper::forget_handles() {
  {
    std::unique_lock lk(handles_mu_);
    handles_.clear();
  }
  std::lock_guard lk(layouts_mu_);
  layouts_.clear();
}

void Swapper::forget_contexts() {
  for (auto& k : kernels_) {
    std::lock_guard lk(k->mu);
    k->variants.clear();
  }
  forget_handles();
}

void Swapper::refuse(Kernel& k, const std::string& why) {
  // under k.mu
  if (!k.refused.empty()) return;
  k.refused = why;
  log::warn("swap: {} runs as the application built it: {}", k.spec.kernel, why);
}

CUfunction Swapper::variant_for(int index, CUfunction f, CUcontext ctx, uint32_t shared_mem) {
  Kernel& k = *kernels_[static_cast<size_t>(index)];
  if (!k.spec.apply && !k.spec.shadow_every) return nullptr;
  CUfunction v = nullptr;
  {
    std::lock_guard lk(k.mu);
    auto it = k.variants.find(ctx);
    if (it == k.variants.end()) {
      std::string why;
      v = driver_.variant_function(k.spec, ctx, &why);
      it = k.variants.emplace(ctx, v).first;
      if (!v) refuse(k, why.empty() ? "the variant image could not be loaded" : why);
    }
    v = it->second;
  }
  if (!v) return nullptr;
  std::string mismatch;
  {
    std::lock_guard lk(layouts_mu_);
    auto key = std::make_pair(f, v);
    auto it = layouts_.find(key);
    if (it == layouts_.end()) it = layouts_.emplace(key, layout_mismatch(driver_.layout_of(f), driver_.variant_layout(v))).first;
    mismatch = it->second;
  }
  if (!mismatch.empty()) {
    std::lock_guard lk(k.mu);
    refuse(k, "its parameter layout differs: " + mismatch);
    return nullptr;
  }
  if (shared_mem > 48 * 1024 && !driver_.allow_shared(v, shared_mem)) {
    std::lock_guard lk(k.mu);
    refuse(k, fmt::format("the variant cannot take the launch's {} bytes of dynamic shared memory", shared_mem));
    return nullptr;
  }
  return v;
}

bool Swapper::swap_launch(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  LaunchArgs a;
  if (!decode_launch(cbid, cb->functionParams, &a) || !a.f) return false;
  const Handle h = handle_of(a.f);
  const int k = h.index;
  if (k < 0) return false;
  Kernel& kernel = *kernels_[static_cast<size_t>(k)];
  const uint64_t index = kernel.launches.fetch_add(1, std::memory_order_relaxed);
  if (kernel.spec.shadow_every) {
    if (index % kernel.spec.shadow_every == 0) shadow_before(k, cbid, cb, a, index);
    return false;  // the application's own kernel runs
  }
  CUcontext ctx = cb->context ? cb->context : driver_.current_context();
  // The checks passed for this handle in this context before: the variant, at once (a launch
  // asking for more than the default shared memory is checked each time).
  CUfunction v = h.variant && h.ctx == ctx && a.shared_mem <= 48 * 1024 ? h.variant : nullptr;
  if (!v) {
    v = variant_for(k, a.f, ctx, a.shared_mem);
    if (!v) return false;
    std::unique_lock lk(handles_mu_);
    Handle& cached = handles_[a.f];
    cached.ctx = ctx;
    cached.variant = v;
  }
  // The argument block is the call's own (CUPTI passes it as const void*; the driver reads
  // it back after the callback): every launch kind names its function in a field `f`.
  void* params = const_cast<void*>(cb->functionParams);
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      static_cast<cuLaunchKernel_params*>(params)->f = v;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      static_cast<cuLaunchCooperativeKernel_params*>(params)->f = v;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      static_cast<cuLaunchKernelEx_params*>(params)->f = v;
      break;
    default:
      return false;
  }
  kernels_[static_cast<size_t>(k)]->swapped.fetch_add(1, std::memory_order_relaxed);
  return true;
}

namespace {
// Our copies of node parameters, alive until the call that reads them returns (the driver
// copies node parameters into the graph during the call).
thread_local CUDA_KERNEL_NODE_PARAMS_v1 t_node_v1;
thread_local CUDA_KERNEL_NODE_PARAMS t_node_v2;
thread_local CUgraphNodeParams t_node_generic;
}  // namespace

bool Swapper::swap_node(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  void* params = const_cast<void*>(cb->functionParams);
  // Each call's node parameters: a v1 struct (function only), a v2 one (function, or a
  // CUkernel, and a context), or the generic CUgraphNodeParams of any node type.
  const CUDA_KERNEL_NODE_PARAMS_v1* v1 = nullptr;
  const CUDA_KERNEL_NODE_PARAMS* v2 = nullptr;
  CUgraphNodeParams* generic = nullptr;
  const CUDA_KERNEL_NODE_PARAMS_v1** v1_slot = nullptr;
  const CUDA_KERNEL_NODE_PARAMS** v2_slot = nullptr;
  CUgraphNodeParams** generic_slot = nullptr;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode:
      v1_slot = &static_cast<cuGraphAddKernelNode_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams:
      v1_slot = &static_cast<cuGraphKernelNodeSetParams_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams:
      v1_slot = &static_cast<cuGraphExecKernelNodeSetParams_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2:
      v2_slot = &static_cast<cuGraphAddKernelNode_v2_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphKernelNodeSetParams_v2:
      v2_slot = &static_cast<cuGraphKernelNodeSetParams_v2_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2:
      v2_slot = &static_cast<cuGraphExecKernelNodeSetParams_v2_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode:
      generic_slot = &static_cast<cuGraphAddNode_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2:
      generic_slot = &static_cast<cuGraphAddNode_v2_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetParams:
      generic_slot = &static_cast<cuGraphNodeSetParams_params*>(params)->nodeParams;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams:
      generic_slot = &static_cast<cuGraphExecNodeSetParams_params*>(params)->nodeParams;
      break;
    default:
      return false;
  }
  if (v1_slot) v1 = *v1_slot;
  if (v2_slot) v2 = *v2_slot;
  if (generic_slot) {
    generic = *generic_slot;
    if (!generic || generic->type != CU_GRAPH_NODE_TYPE_KERNEL) return false;
  }
  if (!v1 && !v2 && !generic) return false;
  CUfunction f = v1 ? v1->func : v2 ? (v2->func ? v2->func : reinterpret_cast<CUfunction>(v2->kern))
                                    : (generic->kernel.func ? generic->kernel.func
                                                            : reinterpret_cast<CUfunction>(generic->kernel.kern));
  if (!f) return false;
  const int k = kernel_index(f);
  // Shadow checking leaves graph nodes to the original (they are not checked).
  if (k < 0 || !kernels_[static_cast<size_t>(k)]->spec.apply) return false;
  CUcontext ctx = v2 && v2->ctx ? v2->ctx : generic && generic->kernel.ctx ? generic->kernel.ctx : driver_.current_context();
  const uint32_t shared = v1 ? v1->sharedMemBytes : v2 ? v2->sharedMemBytes : generic->kernel.sharedMemBytes;
  CUfunction v = variant_for(k, f, ctx, shared);
  if (!v) return false;
  if (v1) {
    t_node_v1 = *v1;
    t_node_v1.func = v;
    *v1_slot = &t_node_v1;
  } else if (v2) {
    t_node_v2 = *v2;
    t_node_v2.func = v;
    t_node_v2.kern = nullptr;  // the driver reads kern only when func is null
    *v2_slot = &t_node_v2;
  } else {
    t_node_generic = *generic;
    t_node_generic.kernel.func = v;
    t_node_generic.kernel.kern = nullptr;
    *generic_slot = &t_node_generic;
  }
  kernels_[static_cast<size_t>(k)]->graph_nodes.fetch_add(1, std::memory_order_relaxed);
  return true;
}

namespace {
thread_local Swapper* t_pending_owner = nullptr;  // a check is pending on this thread
}  // namespace

bool Swapper::on_callback(CUpti_CallbackId cbid, const CUpti_CallbackData* cb) noexcept {
  try {
    if (!cb || t_in_tool || !cb->functionParams) return false;
    if (cb->callbackSite == CUPTI_API_EXIT) {
      switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuModuleUnload:
        case CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload:
          forget_handles();
          return false;
        case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy:
        case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2:
        case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset:
        case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
          forget_contexts();
          return false;
        default:
          break;
      }
      if (t_pending_owner == this && is_launch_cbid(cbid)) {
        ToolScope scope;
        shadow_after(cb);
      }
      return false;
    }
    if (cb->callbackSite != CUPTI_API_ENTER) return false;
    ToolScope scope;  // loading a variant fires callbacks of its own
    if (is_launch_cbid(cbid)) return swap_launch(cbid, cb);
    return swap_node(cbid, cb);
  } catch (...) {
    return false;  // out of memory: this call runs as the application made it
  }
}

thread_local Swapper::Pending* Swapper::t_pending_ = nullptr;

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void Swapper::shadow_skip(Kernel& k, const std::string& why) {
  k.shadow_skipped.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lk(k.mu);
  if (k.shadow_skip_reason.empty()) {
    k.shadow_skip_reason = why;
    log::warn("shadow: a launch of {} was not checked: {}", k.spec.kernel, why);
  }
}

void Swapper::shadow_before(int k, CUpti_CallbackId, const CUpti_CallbackData* cb, const LaunchArgs& a, uint64_t index) {
  Kernel& kernel = *kernels_[static_cast<size_t>(k)];
  if (!shadow_) return shadow_skip(kernel, "no shadow driver");
  if (t_pending_) return shadow_skip(kernel, "a check is already pending on this thread");
  if (driver_.stream_capturing(a.stream))
    return shadow_skip(kernel, "the launch is recorded into a CUDA graph (graph launches are not checked)");
  const double t0 = now_s();
  CUcontext ctx = cb->context ? cb->context : driver_.current_context();
  CUfunction v = variant_for(k, a.f, ctx, a.shared_mem);
  if (!v) return shadow_skip(kernel, "the variant cannot serve this launch (see the refusal)");
  const std::vector<format::ParamSlot> slots = driver_.layout_of(a.f);
  std::vector<uint8_t> params;
  std::string source, why;
  if (slots.empty() || !pack_params(a, slots, &params, &source, &why))
    return shadow_skip(kernel, why.empty() ? "the parameter layout is unknown" : why);
  auto pending = std::make_unique<Pending>();
  pending->kernel = k;
  pending->correlation = cb->correlationId;
  pending->index = index;
  pending->launch = a;
  pending->regions = shadow_regions(*shadow_, params, slots, kernel.spec.param_dtypes);
  uint64_t bytes = 0;
  for (const auto& r : pending->regions) bytes += r.size;
  if (kernel.spec.shadow_max_bytes && bytes > kernel.spec.shadow_max_bytes)
    return shadow_skip(kernel, fmt::format("it reaches {} bytes, more than --shadow-max-bytes", bytes));
  if (pending->regions.empty()) return shadow_skip(kernel, "its parameters point into no device allocation");
  if (!shadow_->run_variant(v, a, pending->regions, &why)) return shadow_skip(kernel, why);
  pending->seconds = now_s() - t0;
  t_pending_ = pending.release();
  t_pending_owner = this;
}

void Swapper::shadow_after(const CUpti_CallbackData* cb) {
  std::unique_ptr<Pending> p(t_pending_);
  t_pending_ = nullptr;
  t_pending_owner = nullptr;
  if (!p || p->correlation != cb->correlationId) {
    if (shadow_) shadow_->release();
    return;
  }
  Kernel& kernel = *kernels_[static_cast<size_t>(p->kernel)];
  const double t0 = now_s();
  std::string why;
  if (!shadow_->finish_original(&why)) {
    shadow_->release();
    return shadow_skip(kernel, why);
  }
  constexpr uint64_t kChunk = 16ull << 20;
  std::vector<uint8_t> expected, actual;
  nlohmann::json failure;
  for (size_t i = 0; i < p->regions.size() && failure.is_null(); ++i) {
    const ShadowRegion& r = p->regions[i];
    compare::Comparator cmp(r.dtype, compare::default_tolerance(r.dtype));
    const uint64_t esize = r.dtype == compare::DType::Bytes ? 1 : compare::dtype_size(r.dtype);
    const uint64_t step = kChunk - kChunk % esize;
    uint64_t compared = 0;
    // Only the ranges the device found different cross to the host (ranges start on chunk
    // boundaries, multiples of every element size).
    for (const auto& [begin, length] : shadow_->may_differ(i, r.size)) {
      for (uint64_t off = begin; off < begin + length; off += step) {
        const uint64_t n = std::min(step, begin + length - off);
        expected.resize(n);
        actual.resize(n);
        if (!shadow_->read(i, off, n, expected.data(), actual.data())) {
          shadow_->release();
          return shadow_skip(kernel, "the results could not be read back");
        }
        cmp.feed(expected.data(), actual.data(), n, off);
        compared += n;
      }
    }
    if (!cmp.result().pass()) {
      // The summary counts the whole region: the bytes the device found identical too.
      compare::Result whole = cmp.result();
      const uint64_t identical = r.size - compared;
      whole.bytes += identical;
      whole.elements += identical / esize;
      const LaunchArgs& a = p->launch;
      failure = {{"launch", p->index},
                 {"grid", {a.grid[0], a.grid[1], a.grid[2]}},
                 {"block", {a.block[0], a.block[1], a.block[2]}},
                 {"shared", a.shared_mem},
                 {"param", r.param},
                 {"region", {{"base", fmt::format("{:#x}", r.base)}, {"size", r.size}, {"dtype", compare::to_string(r.dtype)}}},
                 {"summary", compare::summary(whole)}};
    }
  }
  shadow_->release();
  kernel.shadow_checked.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lk(kernel.mu);
  kernel.shadow_seconds += p->seconds + (now_s() - t0);
  if (!failure.is_null()) {
    kernel.shadow_failed.fetch_add(1, std::memory_order_relaxed);
    if (kernel.first_failure.is_null()) {
      kernel.first_failure = failure;
      log::warn("shadow: launch {} of {} (grid {}x{}x{}) differs from the original: {}", p->index, kernel.spec.kernel,
                p->launch.grid[0], p->launch.grid[1], p->launch.grid[2], failure["summary"].get<std::string>());
    }
  }
}

format::SwapReport Swapper::report(int64_t pid) const {
  format::SwapReport r;
  r.pid = pid;
  for (const auto& k : kernels_) {
    format::SwapCount c;
    c.kernel = k->spec.kernel;
    c.entry = k->spec.entry;
    c.apply = k->spec.apply;
    c.launches = k->launches.load();
    c.swapped = k->swapped.load();
    c.graph_nodes = k->graph_nodes.load();
    c.shadow_checked = k->shadow_checked.load();
    c.shadow_skipped = k->shadow_skipped.load();
    c.shadow_failed = k->shadow_failed.load();
    {
      std::lock_guard lk(k->mu);
      c.refused = k->refused;
      c.shadow_skip_reason = k->shadow_skip_reason;
      c.shadow_seconds = k->shadow_seconds;
      c.first_failure = k->first_failure;
    }
    r.kernels.push_back(std::move(c));
  }
  return r;
}

}  // namespace kerncap::capture
