#include "capture/capturer.hpp"
#include "capture/in_app.hpp"
#include "capture/in_app_records.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <span>

#include "capture/array_snapshot.hpp"
#include "capture/context_scope.hpp"
#include "capture/events.hpp"
#include "capture/launch_info.hpp"
#include "capture/peer_scan.hpp"
#include "capture/ranges.hpp"
#include "capture/region_devices.hpp"
#include "common/device_uuid.hpp"
#include "common/driver.hpp"
#include "common/error.hpp"
#include "common/hex.hpp"
#include "common/log.hpp"
#include "cubin/cubin.hpp"
#include "format/capture_dir.hpp"
#include "names/demangle.hpp"
#include "storage/capture_writer.hpp"
#include "storage/disk_space.hpp"
#include "format/events.hpp"
#include "format/out_layout.hpp"
#include "format/rank.hpp"

namespace kerncap::capture {
namespace fs = std::filesystem;
using format::MemKind;

namespace {

// A sparse region keeps at most about this many stored runs (a short manifest, few copies):
// zero gaps shorter than size / kMaxStoredRuns, and than kMinZeroGap, are stored too.
constexpr uint64_t kMaxStoredRuns = 8192;
constexpr uint64_t kMinZeroGap = uint64_t{64} << 10;

std::string read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(s.begin(), s.end(), '\0', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

FunctionFacts function_facts(const LaunchArgs& a, CUfunction fn, const format::Manifest& m) {
  FunctionFacts f;
  f.sm = m.cc_major * 10 + m.cc_minor;
  f.block_threads = a.block[0] * a.block[1] * a.block[2];
  for (const auto& at : m.func_attrs)
    if (at.id == CU_FUNC_ATTRIBUTE_NUM_REGS) f.registers = at.value;
  int v = 0;
  if (fn && driver().cuFuncGetAttribute &&
      KC_CU_TRY(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn)) == CUDA_SUCCESS)
    f.max_threads = v;
  return f;
}

namespace {

void fill_device(format::Manifest& m) {
  CUdevice dev = 0;
  KC_CU(cuCtxGetDevice(&dev));
  m.device_ordinal = static_cast<int>(dev);
  char name[256] = {};
  if (KC_CU_TRY(cuDeviceGetName(name, sizeof(name), dev)) == CUDA_SUCCESS) m.device_name = name;  // cosmetic
  // The compute capability chooses the image's code: a capture without it is useless.
  KC_CU(cuDeviceGetAttribute(&m.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  KC_CU(cuDeviceGetAttribute(&m.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  KC_CU(cuDriverGetVersion(&m.driver_version));
  m.device_uuid = device_uuid(dev);  // tells two GPUs of one model apart (replay --device)
}

// Memory of other GPUs that this launch can reach: said in the log (and tagged in the
// manifest by tag_region_devices).
void note_peer_memory(const std::vector<RegionState>& states, const format::Manifest& m,
                      const std::vector<uint8_t>& params) {
  std::vector<format::Region> regions;
  for (const auto& st : states) regions.push_back(st.region);
  const auto refs = peer_references(params, m.params, regions, m.device_ordinal);
  if (const std::string s = peer_summary(regions, m.device_ordinal, refs); !s.empty()) log::info("{}", s);
}

}  // namespace

Capturer::Capturer(Config config, const Inventory& inventory)
    : config_(std::move(config)), inventory_(inventory) {
  // Staging pieces must hold whole chunks (see snapshot_before).
  config_.staging_bytes = std::max<uint64_t>(config_.chunk_bytes, config_.staging_bytes / config_.chunk_bytes * config_.chunk_bytes);
}

bool Capturer::begin(const TargetLaunch& t) {
  std::unique_ptr<Pending> p;  // the capture being begun, until it is pending
  try {
    begin_capture(t, p);
    return true;
  } catch (const std::exception& e) {
    abandon(e.what(), p.get());
  } catch (...) {
    abandon("internal error", p.get());
  }
  return false;
}

void Capturer::finish(const CUpti_CallbackData& exit) {
  try {
    std::unique_ptr<Pending> p;
    {
      std::lock_guard lk(mu_);
      auto it = pending_.find(exit.correlationId);
      if (it == pending_.end()) return;
      p = std::move(it->second);
      pending_.erase(it);
    }
    finish_capture(std::move(p), &exit);
  } catch (...) {
    // finish_capture reports its own failures; this only keeps the callback from throwing.
  }
}

void Capturer::begin_capture(const TargetLaunch& t, std::unique_ptr<Pending>& p) {
  const CUpti_CallbackId cbid = t.cbid;
  const CUpti_CallbackData* cb = t.entry;
  const std::string& mangled = t.mangled;
  const uint64_t launch_index = t.launch_index;
  ContextScope ctx(cb->context);
  p = std::make_unique<Pending>();
  p->config = format::config_for_target(config_, t.target);
  p->stop_after = t.stop_after;
  const Config& cfg = p->config;  // this target's
  p->start = std::chrono::steady_clock::now();
  p->writer = std::make_unique<format::CaptureWriter>(cfg.output, ::getpid());
  p->writer->set_chunk_store(cfg.store, cfg.zstd_level);
  format::Manifest& m = p->manifest;
  m.tool_version = KERNCAP_VERSION;
  m.config = cfg.to_json();
  m.pid = ::getpid();
  m.command = read_cmdline();
  m.mangled_name = mangled;
  m.demangled_name = names::demangle(mangled);
  m.dispatch = cfg.dispatch;
  m.launch_index = launch_index;
  m.chunk_bytes = cfg.chunk_bytes;
  log::info("capturing launch {} of {} (dispatch {})", m.launch_index, m.demangled_name, m.dispatch);

  if (!driver_missing_entries().empty()) log::debug("driver lacks: {}", driver_missing_entries());
  // Everything queued before this launch must have finished: BEFORE is its true input. A
  // failure here is the application's own: work it queued before the target failed.
  if (const CUresult r = KC_CU_TRY(cuCtxSynchronize()); r != CUDA_SUCCESS)
    device_error(fmt::format("the application's work before the target launch failed on the GPU ({}): a kernel or "
                             "copy it queued earlier faulted, not the target (run the application under "
                             "compute-sanitizer to find it); nothing was captured",
                             cu_error_text(r, "cuCtxSynchronize", __FILE__, __LINE__)));
  fill_device(m);
  log::debug("device {} sm_{}{}", m.device_name, m.cc_major, m.cc_minor);

  LaunchArgs args;
  decode_launch(cbid, cb->functionParams, &args);
  ResolvedFunction fn = resolve_function(args.f);
  log::debug("function {} module {} (kernel handle: {})", static_cast<void*>(fn.function),
             static_cast<void*>(fn.module), fn.was_kernel_handle);
  describe_attributes(args, fn.function, &m);

  // Code image.
  const KeptImage* image =
      inventory_.images.find(mangled, module_function_names(fn.module), fn.module, function_facts(args, fn.function, m));
  log::debug("image {}", image ? fmt::format("{:#x}", image->hash) : std::string("none"));
  if (!image)
    device_error("the code image holding this kernel was not seen at module load (was the module loaded "
                 "before kerncap was injected?)");
  cubin::ImageKind kind = cubin::detect_kind(image->bytes);
  p->writer->write_image(m, image->bytes.data(), image->bytes.size(), image->hash,
                         kind == cubin::ImageKind::Unknown ? "cubin" : cubin::to_string(kind));
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
  p->writer->write_params(m, param_bytes.data(), param_bytes.size());
  // Texture and surface objects among the parameters: refused here when replay could not
  // re-create one (never a capture that replays wrong).
  TexturePlan textures = plan_textures(param_bytes, m.params, inventory_.textures);
  if (!textures.refusal.empty())
    input_error("this launch cannot be captured: " + textures.refusal);
  // The memory linear and pitch2D textures read is reachable from the launch, though no
  // pointer to it is among the parameters.
  std::vector<uint8_t> roots = param_bytes;
  roots.resize((roots.size() + 7) / 8 * 8);  // the closure looks at aligned words
  for (const auto& s : textures.memory) {
    const size_t at = roots.size();
    roots.resize(at + 8);
    std::memcpy(roots.data() + at, &s.address, 8);
  }

  // Regions: every live allocation, then the module's globals.
  uint32_t id = 0;
  for (const auto& r : coalesce(inventory_.tracker.live(), static_cast<int>(MemKind::Vmm))) {
    RegionState st;
    st.region = {id, static_cast<MemKind>(r.kind), r.base, r.size, std::string(), 0, ""};
    st.address = r.base;
    p->regions.push_back(std::move(st));
    ++id;
  }
  if (have_parsed && fn.module) {
    std::map<uint64_t, uint64_t> global_spans;  // start -> end of the globals taken
    for (const auto& g : parsed.globals) {
      CUdeviceptr addr = 0;
      size_t size = 0;
      // A global the image lists but the driver does not know (optimised out) is no error.
      if (KC_CU_TRY(cuModuleGetGlobal(&addr, &size, fn.module, g.name.c_str())) != CUDA_SUCCESS || size == 0) continue;
      // Two symbols of one variable (an alias, as NCCL's images have) are one region.
      if (overlaps_any(global_spans, addr, addr + size)) {
        log::debug("module global {} shares its bytes with another global; captured once", g.name);
        continue;
      }
      global_spans[addr] = addr + size;
      RegionState st;
      st.region = {id, MemKind::Global, addr, size, std::string(), 0, g.name};
      st.address = addr;
      p->regions.push_back(std::move(st));
      ++id;
    }
  }
  tag_region_devices(p->regions);
  note_peer_memory(p->regions, m, param_bytes);
  uint64_t total = 0;
  for (const auto& st : p->regions) total += st.region.size;
  m.before_bytes = total;
  // The device scan: zero chunks are not copied (the region is stored sparse), and AFTER
  // later copies only the chunks whose signature changed.
  std::string why_not;
  if (!cfg.device_scan) why_not = "KERNCAP_DEVICE_SCAN=0";
  else if (cfg.chunk_bytes % 8 == 0) p->scanner = GpuScanner::create(&why_not);
  else why_not = "the chunk size is not a multiple of 8 bytes";
  if (!p->scanner) log::info("device scan unavailable ({}): every byte of every region is read", why_not);
  p->stager = std::make_unique<Stager>(cfg.staging_bytes);
  if (p->scanner && !cfg.closure_all) {
    try {
      omit_unreachable(*p, roots);
    } catch (const std::exception& e) {
      // Without the closure the capture is larger, never wrong: keep every region.
      for (auto& st : p->regions) st.region.omitted = false;
      log::warn("closure: {}; every region is kept", e.what());
    }
  }
  std::vector<std::vector<ByteRun>> stored(p->regions.size());
  uint64_t to_store = 0, scanned_bytes = 0;
  const auto scan_start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < p->regions.size(); ++i) {
    RegionState& st = p->regions[i];
    if (!p->scanner || !p->scanner->can_scan(st.region.kind, st.address)) {
      to_store += st.region.size;
      continue;
    }
    // Omitted regions are scanned too: AFTER then sees a write into one (a closure gap).
    st.hashes = p->scanner->scan(st.address, st.region.size, scan_chunk(cfg.chunk_bytes));
    st.scanned = true;
    scanned_bytes += st.region.size;
    if (st.region.omitted) continue;
    stored[i] = nonzero_runs(st.hashes, st.region.size, scan_chunk(cfg.chunk_bytes),
                             merge_gap(st.region.size, kMaxStoredRuns, kMinZeroGap));
    for (const auto& r : stored[i]) to_store += r.size;
  }
  if (p->scanner)
    log::info("device scan: {} in {:.3f} s ({:.3f} s of it waiting for the GPU)", human_bytes(scanned_bytes),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - scan_start).count(),
              p->scanner->waited_s());
  log::info("snapshot BEFORE: {} regions, {} ({} to store: the rest is zeros or omitted)", p->regions.size(),
            human_bytes(total), human_bytes(to_store));
  // Before compression: the most the chunks can take (a shared store may already hold some).
  format::check_disk_space(p->writer->chunks().dir(), to_store);
  Progress progress("snapshot BEFORE", total, cfg.verbose >= 1);
  for (size_t i = 0; i < p->regions.size(); ++i) {
    RegionState& st = p->regions[i];
    if (st.scanned)
      snapshot_before_sparse(*p->stager, st, stored[i], p->writer->chunks(), progress);  // none when omitted
    else
      snapshot_before(*p->stager, st, p->writer->chunks(), cfg.chunk_bytes, progress);
  }
  progress.done();
  for (const auto& st : p->regions) m.regions.push_back(st.region);
  capture_textures(*p, std::move(textures));
  std::lock_guard lk(mu_);
  pending_[cb->correlationId] = std::move(p);
}

void Capturer::capture_textures(Pending& p, TexturePlan plan) {
  format::Manifest& m = p.manifest;
  for (const auto& s : plan.memory) {
    const bool tracked = std::any_of(p.regions.begin(), p.regions.end(), [&](const RegionState& st) {
      return st.region.kind != MemKind::Global && s.address >= st.region.base &&
             s.address - st.region.base + s.bytes <= st.region.size;
    });
    if (!tracked)
      input_error(fmt::format("this launch cannot be captured: a texture reads {} at {}, which is not inside one "
                              "allocation kerncap tracked (memory allocated before kerncap was loaded?)",
                              human_bytes(s.bytes), hex_addr(s.address)));
  }
  if (plan.textures.empty()) return;
  uint32_t id = static_cast<uint32_t>(m.regions.size());
  uint64_t bytes = 0, base = format::kArrayRegionBase;
  for (size_t i = 0; i < plan.textures.arrays.size(); ++i) {
    format::ArrayRecord& a = plan.textures.arrays[i];
    a.region = id++;
    ArrayState as;
    as.record = a;
    as.source = plan.sources[i];
    as.st.region.id = a.region;
    as.st.region.kind = MemKind::Array;
    as.st.region.size = format::array_bytes(a);
    as.st.region.base = base;
    base += (as.st.region.size + 0xffff) & ~uint64_t{0xffff};  // apart, 64 KiB aligned
    const std::vector<uint8_t> contents = read_array(a, as.source);
    snapshot_before_bytes(as.st, contents, p.writer->chunks(), config_.chunk_bytes);
    bytes += contents.size();
    m.regions.push_back(as.st.region);
    p.arrays.push_back(std::move(as));
  }
  m.before_bytes += bytes;
  log::info("textures: {} texture/surface handles in the parameters, {} objects, {} CUDA arrays ({})",
            plan.textures.handles.size(), plan.textures.objects.size(), plan.textures.arrays.size(),
            human_bytes(bytes));
  m.textures = std::move(plan.textures);
}

void Capturer::omit_unreachable(Pending& p, std::span<const uint8_t> params) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<ClosureRegion> regions;
  std::vector<RangeIndex::Range> ranges;
  for (const auto& st : p.regions) {
    // Globals are reached by symbol; memory the scan cannot read is never omitted.
    regions.push_back({st.address, st.region.size, st.region.kind == MemKind::Global,
                       !p.scanner->can_scan(st.region.kind, st.address)});
    ranges.push_back({st.address, st.region.size});
  }
  const RangeIndex index(ranges);
  p.scanner->set_ranges(index);
  auto pointers_in = [&](size_t i) -> std::vector<size_t> {
    const RegionState& st = p.regions[i];
    if (p.scanner->can_scan(st.region.kind, st.address)) return p.scanner->pointers_in(st.address, st.region.size);
    std::vector<bool> seen(p.regions.size());
    std::vector<size_t> out;
    p.stager->read(st.address, st.region.size, st.region.kind, [&](const uint8_t* data, uint64_t n, uint64_t) {
      for (size_t j : index.pointed({data, n}))
        if (!seen[j]) {
          seen[j] = true;
          out.push_back(j);
        }
    });
    return out;
  };
  const std::vector<bool> in = closure(regions, params, pointers_in);
  uint64_t kept = 0, kept_bytes = 0, omitted_bytes = 0;
  for (size_t i = 0; i < p.regions.size(); ++i) {
    format::Region& r = p.regions[i].region;
    if (in[i]) {
      ++kept;
      kept_bytes += r.size;
      continue;
    }
    r.omitted = true;
    omitted_bytes += r.size;
  }
  log::info("closure: {} of {} regions ({} of {}) are reachable from the launch's parameters and module globals; "
            "the other {} are recorded by address and size only (--closure all keeps them); {:.3f} s",
            kept, p.regions.size(), human_bytes(kept_bytes), human_bytes(kept_bytes + omitted_bytes),
            human_bytes(omitted_bytes), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void Capturer::finish_capture(std::unique_ptr<Pending> p, const CUpti_CallbackData* cb) {
  const Config& cfg = p->config;  // this target's
  ContextScope ctx(cb->context);
  try {
    const auto* rv = static_cast<const CUresult*>(cb->functionReturnValue);
    if (rv && *rv != CUDA_SUCCESS)
      device_error(cu_error_text(*rv, "the captured launch", __FILE__, __LINE__));
    // A failure here is the target's own (its inputs were complete and valid at BEFORE).
    if (const CUresult r = KC_CU_TRY(cuCtxSynchronize()); r != CUDA_SUCCESS)
      device_error(fmt::format("the target launch itself failed on the GPU ({}): the kernel faulted with the "
                               "application's inputs (the work before it had completed); nothing was captured",
                               cu_error_text(r, "cuCtxSynchronize", __FILE__, __LINE__)));
    format::Manifest& m = p->manifest;
    // The in-app time: the target's kernel record has completed with it (and is left out: it
    // ran right after the snapshot, not as the application runs it).
    flush_in_app_records();
    if (const auto t = in_app_times().time(m.mangled_name, {m.grid, m.block, m.shared_mem_bytes},
                                           /*leave_out_latest=*/true)) {
      m.in_app_median_ns = t->median_ns;
      m.in_app_samples = t->samples;
      m.in_app_launches = t->launches;
      if (t->launches > 1) m.in_app_between_ns = t->median_between_ns;
      log::info("in-app time: median {:.2f} µs over {} of {} launches (min {:.2f}, max {:.2f}; medians before a "
                "launch: GPU idle {:.2f} µs, other kernels since the previous one {:.2f} µs); the first launch "
                "{:.2f} µs, the captured one {:.2f} µs",
                t->median_ns / 1e3, t->samples, t->launches, t->min_ns / 1e3, t->max_ns / 1e3,
                t->median_idle_ns / 1e3, t->median_between_ns / 1e3, t->first_ns / 1e3, t->latest_ns / 1e3);
    }
    Progress progress("snapshot AFTER", m.before_bytes, cfg.verbose >= 1);
    format::BlobWriter after = p->writer->open_after(m);
    for (const auto& st : p->regions) {
      if (st.scanned) {
        const auto now = p->scanner->scan(st.address, st.region.size, scan_chunk(cfg.chunk_bytes));
        const auto changed = changed_runs(st.hashes, now, st.region.size, scan_chunk(cfg.chunk_bytes));
        if (st.region.omitted && !changed.empty())
          log::warn("the launch changed region {} ({} at {}), which no pointer of its parameters reaches, so its "
                    "BEFORE bytes were not stored (a closure gap): validation will say so; extract again with "
                    "--closure all for a complete capture",
                    st.region.id, human_bytes(st.region.size), hex_addr(st.region.base));
        snapshot_after_changed(*p->stager, st, changed, after, m.after, progress);
      } else {
        snapshot_after(*p->stager, st, after, cfg.chunk_bytes, m.after, progress);
      }
    }
    for (const auto& as : p->arrays)  // written through surfaces
      snapshot_after_bytes(as.st, read_array(as.record, as.source), after, config_.chunk_bytes, m.after);
    after.close();
    progress.done();
    m.after_bytes = 0;
    for (const auto& r : m.after) m.after_bytes += r.size;
    p->stager.reset();
    p->scanner.reset();
    // BEFORE's chunks were compressed and written while the launch and AFTER ran.
    std::vector<std::vector<size_t>> tickets;
    for (const auto& st : p->regions) tickets.push_back(st.tickets);
    for (const auto& as : p->arrays) tickets.push_back(as.st.tickets);
    const auto chunk_start = std::chrono::steady_clock::now();
    const format::ChunkStats cs = p->writer->finish_chunks(m, tickets);
    log::info("chunks: {} stored in {} chunks, {} distinct: {} in files ({} newly written{}; {} kept uncompressed); "
              "waited {:.2f} s for them",
              human_bytes(cs.bytes), cs.chunks, cs.unique, human_bytes(cs.file_bytes), cs.written,
              cfg.store.empty() ? "" : " to the shared store", cs.raw,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - chunk_start).count());
    if (before_publish_) before_publish_(*p->writer, m);
    m.capture_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - p->start).count();
    const fs::path final_dir = p->writer->publish(m);
    log::info("captured {} -> {} (BEFORE {}, AFTER {} in {} runs, {:.2f} s)", m.demangled_name, final_dir.string(),
              human_bytes(m.before_bytes), human_bytes(m.after_bytes), m.after.size(), m.capture_seconds);
    emit(format::events::captured(final_dir.string(), !p->stop_after));
  } catch (const std::exception& e) {
    abandon(e.what(), p.get());
    return;
  }
  if (p->stop_after) {
    log::info("stopping the application now that the capture is complete (--continue lets it run on)");
    emit(format::events::stopping());
    std::fflush(nullptr);
    // One rank of a job: a non-zero status makes its launcher end the other ranks (format/rank.hpp).
    ::_exit(cfg.rank >= 0 ? format::kStoppedRankExitStatus : 0);
  }
}

void Capturer::abandon_pending(uint32_t correlation, const std::string& why) {
  std::unique_ptr<Pending> p;
  {
    std::lock_guard lk(mu_);
    auto it = pending_.find(correlation);
    if (it != pending_.end()) {
      p = std::move(it->second);
      pending_.erase(it);
    }
  }
  abandon(why, p.get());
}

void Capturer::abandon(const std::string& why, Pending* p) {
  log::warn("capture failed: {}", why);
  emit(format::events::error(why));
  // The partial directory goes now (it may be most of the disk); one line stays in OUT.
  if (p && p->writer) p->writer->abandon(why);
}

}  // namespace kerncap::capture
