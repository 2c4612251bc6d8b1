// The one place where the KERNCAP_* names are spelled (see protocol.hpp).
#include "format/protocol.hpp"

#include <array>
#include <charconv>
#include <cstdlib>
#include <cstdint>

#include <fmt/format.h>

namespace kerncap::format {
namespace {

std::optional<uint64_t> parse_u64(std::string_view s) {
  int base = 10;
  if (s.starts_with("0x") || s.starts_with("0X")) {
    s.remove_prefix(2);
    base = 16;
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<bool> parse_flag(std::string_view v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

std::string flag(bool b) { return b ? "1" : "0"; }

// The parse/print pairs of the library's variables. Each returns the problem text, or "".
std::string parse_mode(std::string_view v, Config& c) {
  if (v == "capture") c.mode = Mode::Capture;
  else if (v == "profile") c.mode = Mode::Profile;
  else if (v == "off") c.mode = Mode::Off;
  else return "must be 'capture' or 'profile'";
  return "";
}
std::string parse_output(std::string_view v, Config& c) {
  c.output = v;
  return "";
}
std::string parse_kernel(std::string_view v, Config& c) {
  c.kernel = v;
  return "";
}
std::string parse_flag_into(std::string_view v, bool& out) {
  auto b = parse_flag(v);
  if (!b) return "must be 1 or 0";
  out = *b;
  return "";
}
std::string parse_regex(std::string_view v, Config& c) { return parse_flag_into(v, c.regex); }
std::string parse_continue(std::string_view v, Config& c) { return parse_flag_into(v, c.keep_running); }
std::string parse_dump(std::string_view v, Config& c) { return parse_flag_into(v, c.dump_images); }
std::string parse_scan(std::string_view v, Config& c) { return parse_flag_into(v, c.device_scan); }
std::string parse_closure(std::string_view v, Config& c) {
  if (v != "reachable" && v != "all") return "must be reachable or all";
  c.closure_all = v == "all";
  return "";
}
std::string parse_store(std::string_view v, Config& c) {
  c.store = v;
  return "";
}
std::string parse_zstd(std::string_view v, Config& c) {
  auto n = parse_u64(v);
  if (!n || *n > 19) return "must be a zstd level from 0 (no compression) to 19";
  c.zstd_level = static_cast<int>(*n);
  return "";
}
const char* in_app_name(Config::InAppTime t) {
  return t == Config::InAppTime::Start ? "start" : t == Config::InAppTime::Off ? "off" : "match";
}
std::string parse_in_app(std::string_view v, Config& c) {
  if (v == "match") c.in_app_time = Config::InAppTime::Match;
  else if (v == "start") c.in_app_time = Config::InAppTime::Start;
  else if (v == "off") c.in_app_time = Config::InAppTime::Off;
  else return "must be match, start or off";
  return "";
}
std::string parse_targets(std::string_view v, Config& c) { return targets_from_text(v, &c.targets); }
std::string parse_dispatch(std::string_view v, Config& c) {
  auto n = parse_u64(v);
  if (!n) return "is not a number";
  c.dispatch = *n;
  return "";
}
std::string parse_rank(std::string_view v, Config& c) {
  auto n = parse_u64(v);
  if (!n || *n > uint64_t{INT64_MAX}) return "is not a rank (a number from 0)";
  c.rank = static_cast<int64_t>(*n);
  return "";
}
std::string parse_device(std::string_view v, Config& c) {
  auto n = parse_u64(v);
  if (!n || *n > 1023) return "is not a CUDA device ordinal (0..1023)";
  c.device = static_cast<int>(*n);
  return "";
}
std::string parse_verbose(std::string_view v, Config& c) {
  auto n = parse_u64(v);
  if (!n || *n > 9) return "must be 0, 1 or 2";
  c.verbose = static_cast<int>(*n);
  return "";
}
std::string parse_chunk(std::string_view v, Config& c) {
  auto n = parse_u64(v);
  if (!n || *n < 256 || *n > (1u << 30) || (*n & (*n - 1)) != 0) return "must be a power of two >= 256";
  c.chunk_bytes = static_cast<uint32_t>(*n);
  return "";
}
std::string parse_staging(std::string_view v, Config& c) {
  auto n = parse_u64(v);
  if (!n || *n < (1u << 20)) return "must be at least 1 MiB";
  c.staging_bytes = *n & ~uint64_t{4095};
  return "";
}

const Config kDefaults{};

constexpr unsigned kLibShim = kLibrary | kTritonShim;
constexpr unsigned kShimApi = kTritonShim | kPythonApi;

const std::array<EnvVar, 37> kVars = {{
    {Var::Mode, "KERNCAP_MODE", kLibrary, true, "capture, profile", "",
     "what the injected library does; unset: it stays inert", parse_mode,
     [](const Config& c) -> std::optional<std::string> { return std::string(to_string(c.mode)); }},
    {Var::Output, "KERNCAP_OUTPUT", kLibrary, true, "path", "",
     "directory for the capture or the profile records (created by the launcher)", parse_output,
     [](const Config& c) -> std::optional<std::string> { return c.output; }},
    {Var::Kernel, "KERNCAP_KERNEL", kLibrary, true, "text", "",
     "kernel name pattern: substring of the demangled or mangled name", parse_kernel,
     [](const Config& c) -> std::optional<std::string> { return c.kernel; }},
    {Var::Regex, "KERNCAP_REGEX", kLibrary, true, "0, 1", "0", "1: the kernel pattern is an ECMAScript regex",
     parse_regex, [](const Config& c) -> std::optional<std::string> { return flag(c.regex); }},
    {Var::Dispatch, "KERNCAP_DISPATCH", kLibrary, true, "count", "0",
     "capture the Nth launch that matches, counting from 0", parse_dispatch,
     [](const Config& c) -> std::optional<std::string> { return std::to_string(c.dispatch); }},
    {Var::Continue, "KERNCAP_CONTINUE", kLibrary, true, "0, 1", "0",
     "1: let the application run on after the capture (0: stop it)", parse_continue,
     [](const Config& c) -> std::optional<std::string> { return flag(c.keep_running); }},
    {Var::Rank, "KERNCAP_RANK", kLibrary, true, "rank", "",
     "capture only in the process of this rank (its RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or "
     "SLURM_PROCID, first set wins; else its place in the order the job's processes initialised CUDA); other "
     "processes run untouched",
     parse_rank,
     [](const Config& c) -> std::optional<std::string> {
       return c.rank < 0 ? std::string() : std::to_string(c.rank);  // "": a stale value in the shell is overridden
     }},
    {Var::Device, "KERNCAP_DEVICE", kLibrary, true, "ordinal", "",
     "count only launches on this CUDA device ordinal of the process (as the process numbers its devices, "
     "after CUDA_VISIBLE_DEVICES)",
     parse_device,
     [](const Config& c) -> std::optional<std::string> {
       return c.device < 0 ? std::string() : std::to_string(c.device);
     }},
    {Var::Verbose, "KERNCAP_VERBOSE", kLibShim, true, "0, 1, 2", "0", "0 quiet, 1 progress, 2 debug",
     parse_verbose, [](const Config& c) -> std::optional<std::string> { return std::to_string(c.verbose); }},
    {Var::ChunkBytes, "KERNCAP_CHUNK_BYTES", kLibrary, false, "bytes, a power of two >= 256", "4096",
     "granularity of AFTER change detection", parse_chunk,
     [](const Config& c) -> std::optional<std::string> {
       if (c.chunk_bytes == kDefaults.chunk_bytes) return std::nullopt;
       return std::to_string(c.chunk_bytes);
     }},
    {Var::StagingBytes, "KERNCAP_STAGING_BYTES", kLibrary, false, "bytes, >= 1 MiB", "67108864",
     "size of the pinned staging buffer the snapshots stream through", parse_staging,
     [](const Config& c) -> std::optional<std::string> {
       if (c.staging_bytes == kDefaults.staging_bytes) return std::nullopt;
       return std::to_string(c.staging_bytes);
     }},
    {Var::DumpImages, "KERNCAP_DUMP_IMAGES", kLibrary, false, "0, 1", "0",
     "1: save every code image the application loads under OUT/.kerncap/images (debugging)", parse_dump,
     [](const Config& c) -> std::optional<std::string> {
       if (!c.dump_images) return std::nullopt;
       return flag(c.dump_images);
     }},
    {Var::DeviceScan, "KERNCAP_DEVICE_SCAN", kLibrary, false, "0, 1", "1",
     "0: snapshots read every byte of every region instead of scanning it on the GPU first (to compare)",
     parse_scan,
     [](const Config& c) -> std::optional<std::string> {
       if (c.device_scan) return std::nullopt;
       return flag(c.device_scan);
     }},
    {Var::Closure, "KERNCAP_CLOSURE", kLibrary, true, "reachable, all", "reachable",
     "which regions a capture stores: those reachable from the launch's parameters and module globals through "
     "pointers, or all tracked memory",
     parse_closure,
     [](const Config& c) -> std::optional<std::string> {
       if (!c.closure_all) return std::nullopt;
       return std::string("all");
     }},
    {Var::Store, "KERNCAP_STORE", kLibrary | kCli, true, "path", "",
     "a shared chunk store: the capture writes its BEFORE chunks there (each kept once across the captures "
     "that share it) instead of under OUT/capture/chunks; replay, validate, info, footprint and prune read "
     "such a capture's chunks from it (as --store DIR)",
     parse_store,
     [](const Config& c) -> std::optional<std::string> {
       if (c.store.empty()) return std::nullopt;
       return c.store;
     }},
    {Var::ZstdLevel, "KERNCAP_ZSTD_LEVEL", kLibrary, false, "0..19", "1",
     "zstd level of the capture's BEFORE chunks (0: stored uncompressed); 1 keeps up with the disk on a few "
     "threads (docs/capture.md)",
     parse_zstd,
     [](const Config& c) -> std::optional<std::string> {
       if (c.zstd_level == kDefaults.zstd_level) return std::nullopt;
       return std::to_string(c.zstd_level);
     }},
    {Var::InAppTime, "KERNCAP_IN_APP_TIME", kLibrary, false, "match, start, off", "match",
     "when capture mode starts CUPTI kernel records for the captured kernel's in-app time (docs/capture.md): at "
     "the first launch whose name matches, at start-up (every kernel, a little slower), or never (no in-app time)",
     parse_in_app,
     [](const Config& c) -> std::optional<std::string> {
       if (c.in_app_time == Config::InAppTime::Match) return std::nullopt;
       return std::string(in_app_name(c.in_app_time));
     }},
    {Var::Targets, "KERNCAP_TARGETS", kLibrary, true, "JSON", "",
     "several targets in one run: {\"version\": 1, \"targets\": [{\"kernel\", \"match\" (substring, regex, "
     "exact), \"dispatch\", \"output\"}]}, each captured into its own output directory; KERNCAP_KERNEL, "
     "KERNCAP_REGEX and KERNCAP_DISPATCH are then unused and KERNCAP_OUTPUT is the targets' parent",
     parse_targets,
     [](const Config& c) -> std::optional<std::string> {
       return c.targets.empty() ? std::string() : targets_to_text(c.targets);  // "": a stale value is overridden
     }},
    {Var::TritonOut, "KERNCAP_TRITON_OUT", kShimApi, true, "path", "",
     "where the Triton shim records compiled and loaded kernels and their sources (OUT/triton; under "
     "`profile`, the records folder's triton/); unset: the shim is inert",
     nullptr, nullptr},
    {Var::Library, "KERNCAP_LIBRARY", kCli, false, "path", "",
     "the libkerncap.so to inject (default: ../lib or the build tree next to the kerncap binary)", nullptr,
     nullptr},
    {Var::PythonDir, "KERNCAP_PYTHON_DIR", kCli, false, "path", "",
     "folder holding the kerncap Python package (default: the one installed with the kerncap binary: "
     "share/kerncap/python, or site-packages for pip; else the source tree)",
     nullptr, nullptr},
    {Var::Python, "KERNCAP_PYTHON", kCli, false, "path", "python3",
     "Python interpreter that writes the Triton reproducer and runs `kerncap mcp` (also used by the test "
     "scripts)", nullptr, nullptr},
    {Var::Serve, "KERNCAP_SERVE", kCli, false, "auto, off", "auto",
     "whether `kerncap validate` hands its evaluation to a running `kerncap serve` of the same directory "
     "(auto) or always validates in its own process (off); --server overrides it",
     nullptr, nullptr},
    {Var::Bin, "KERNCAP_BIN", kPythonApi, false, "path", "",
     "the kerncap executable the Python API and the MCP server run (default: installed with the package, "
     "PATH, then the build tree)", nullptr, nullptr},
    {Var::ReplayLib, "KERNCAP_REPLAY_LIB", kPythonApi, false, "path", "",
     "the replay engine (libkerncap_replay.so) that the Python package and Triton reproducers load (default: "
     "beside the module, the pip-installed package's lib/, then the build's lib/)",
     nullptr, nullptr},
    {Var::Window, "KERNCAP_WINDOW", kLibrary, true, "N:pattern", "",
     "a window of launches (`kerncap window extract`, docs/window.md): the capture begins at the target launch "
     "(KERNCAP_KERNEL, KERNCAP_DISPATCH) and ends at the Nth launch (from 0, counted from the target on its "
     "stream) whose name matches the pattern (a regex with KERNCAP_REGEX); unset: one launch",
     [](std::string_view v, Config& c) -> std::string {
       const size_t colon = v.find(':');
       const auto n = colon == std::string_view::npos ? std::nullopt : parse_u64(v.substr(0, colon));
       if (!n || colon + 1 >= v.size()) return "must be N:pattern (a count from 0, a colon, a kernel name pattern)";
       c.window_end_dispatch = *n;
       c.window_end = std::string(v.substr(colon + 1));
       return "";
     },
     [](const Config& c) -> std::optional<std::string> {
       if (c.window_end.empty()) return std::nullopt;
       return std::to_string(c.window_end_dispatch) + ":" + c.window_end;
     }},
    {Var::WindowObserve, "KERNCAP_WINDOW_OBSERVE", kLibrary, true, "0..1000000", "256",
     "after a window (KERNCAP_WINDOW): how many later kernel launches the library watches for reads of the "
     "regions the window changed (`kerncap window validate --live-out auto`, window_liveout.json); 0: none",
     [](std::string_view v, Config& c) -> std::string {
       const auto n = parse_u64(v);
       if (!n || *n > 1000000) return "must be a launch count from 0 to 1000000";
       c.window_observe = *n;
       return "";
     },
     [](const Config& c) -> std::optional<std::string> {
       if ((c.window_end.empty() && !c.window_graph && c.window_range.empty()) || c.window_observe == 256) return std::nullopt;
       return std::to_string(c.window_observe);
     }},
    {Var::WindowGraph, "KERNCAP_WINDOW_GRAPH", kLibrary, true, "N or N:pattern", "",
     "a window of one CUDA graph launch (`kerncap window extract --graph`, docs/window.md): the Nth launch (from 0) "
     "among the graph launches whose graph holds a kernel matching the pattern (a regex with KERNCAP_REGEX; no "
     "pattern: every graph launch counts); KERNCAP_KERNEL is not needed",
     [](std::string_view v, Config& c) -> std::string {
       const size_t colon = v.find(':');
       const auto n = parse_u64(v.substr(0, colon));
       if (!n) return "must be N or N:pattern (a graph launch count from 0, then a kernel name pattern)";
       c.window_graph = true;
       c.window_graph_launch = *n;
       c.window_graph_kernel = colon == std::string_view::npos ? std::string() : std::string(v.substr(colon + 1));
       return "";
     },
     [](const Config& c) -> std::optional<std::string> {
       if (!c.window_graph) return std::nullopt;
       return std::to_string(c.window_graph_launch) +
              (c.window_graph_kernel.empty() ? std::string() : ":" + c.window_graph_kernel);
     }},
    {Var::WindowRange, "KERNCAP_WINDOW_RANGE", kLibrary, true, "N:name", "",
     "a window of one NVTX range (`kerncap window extract --range`, docs/window.md): from the first kernel launch "
     "after the Nth push (from 0) of a range named name (or name followed by \", \"; a regex with KERNCAP_REGEX) "
     "to its pop on the pushing thread; needs NVTX_INJECTION64_PATH naming libkerncap.so (the launcher sets it); "
     "KERNCAP_KERNEL is not needed",
     [](std::string_view v, Config& c) -> std::string {
       const size_t colon = v.find(':');
       const auto n = colon == std::string_view::npos ? std::nullopt : parse_u64(v.substr(0, colon));
       if (!n || colon + 1 >= v.size()) return "must be N:name (a push count from 0, a colon, the range's name)";
       c.window_range_occurrence = *n;
       c.window_range = std::string(v.substr(colon + 1));
       return "";
     },
     [](const Config& c) -> std::optional<std::string> {
       if (c.window_range.empty()) return std::nullopt;
       return std::to_string(c.window_range_occurrence) + ":" + c.window_range;
     }},
    {Var::ProfileCupti, "KERNCAP_PROFILE_CUPTI", kLibrary, false, "key=value,...", "",
     "diagnostic, to measure what CUPTI costs profile mode (bench/profile_overhead.sh): kind=concurrent|kernel|none "
     "(the kernel records' activity kind; none: no kernel records, an empty profile), memory=0|1 (memcpy/memset "
     "records), correlation=window|always (external-correlation records only inside benchmark windows, or from "
     "the start), callback=full|empty|off (sampled timing's launch callbacks: counting, a handler that returns at "
     "once, none), host_buffer=BYTES (each activity buffer, 8M), device_buffer=BYTES, pool_limit=N, preallocate=N "
     "(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, _POOL_LIMIT, _PRE_ALLOCATE_VALUE), per_thread=0|1 "
     "(_PER_THREAD_ACTIVITY_BUFFER), pinned=0|1 (_MEM_ALLOCATION_TYPE_HOST_PINNED), flush_ms=N "
     "(cuptiActivityFlushPeriod); sizes take K, M, G; unset: what `kerncap profile` uses (docs/profile.md)",
     [](std::string_view v, Config& c) { return profile_cupti_from_text(v, &c.profile_cupti); },
     [](const Config& c) -> std::optional<std::string> {
       const std::string text = profile_cupti_text(c.profile_cupti);
       if (text.empty()) return std::nullopt;
       return text;
     }},
    {Var::ProfileSample, "KERNCAP_PROFILE_SAMPLE", kLibrary, true, "0, 2..1000", "0",
     "profile mode's sampled timing (`kerncap profile --sample N`): every launch is counted (calls and extract's "
     "launch indices stay exact), and once a process has made 10000 launches its kernels are timed in one window "
     "of 10000 launches at the end of every N x 10000; totals are then estimates (docs/profile.md); 0: every launch is timed",
     [](std::string_view v, Config& c) -> std::string {
       auto n = parse_u64(v);
       if (!n || *n == 1 || *n > 1000) return "must be 0 (off) or from 2 to 1000";
       c.profile_sample = static_cast<uint32_t>(*n);
       return "";
     },
     [](const Config& c) -> std::optional<std::string> { return std::to_string(c.profile_sample); }},
    {Var::ProfileParams, "KERNCAP_PROFILE_PARAMS", kLibrary, true, "JSON", "",
     "profile mode (`extract --regimes`'s profiled run, docs/capture.md): {\"version\": 1, \"kernels\": "
     "[{\"kernel\", \"match\" (substring, regex, exact)}]}: each launch of a matching kernel also records its "
     "parameter words that are not pointers (sizes, strides, flags), so that regimes tell apart launches of one "
     "shape; unset: none",
     [](std::string_view v, Config& c) -> std::string { return profile_params_from_text(v, &c.profile_params); },
     [](const Config& c) -> std::optional<std::string> {
       // "": a stale value in the shell is overridden.
       return c.profile_params.empty() ? std::string() : profile_params_to_text(c.profile_params);
     }},
    {Var::Swaps, "KERNCAP_SWAPS", kLibrary, true, "JSON", "",
     "profile mode (`kerncap run --swap`, docs/swap.md): {\"version\": 1, \"swaps\": [{\"kernel\" (mangled), "
     "\"entry\" (the variant's kernel), \"image\" (absolute path), \"apply\"}]}: every launch of each kernel is "
     "served by its variant (apply: false only counts them)",
     [](std::string_view v, Config& c) -> std::string { return swaps_from_text(v, &c.swaps); },
     [](const Config& c) -> std::optional<std::string> {
       return c.swaps.empty() ? std::string() : swaps_to_text(c.swaps);  // "": a stale value is overridden
     }},
    {Var::RunArm, "KERNCAP_RUN_ARM", kCheckCommand, true, "base, swap", "",
     "`kerncap run --check CMD`: which arm the run CMD judges was (unmodified or swapped/shadow-checked)", nullptr,
     nullptr},
    {Var::RunIndex, "KERNCAP_RUN_INDEX", kCheckCommand, true, "count", "",
     "`kerncap run --check CMD`: the run's index, from 0, in the order run", nullptr, nullptr},
    {Var::RunDir, "KERNCAP_RUN_DIR", kCheckCommand, true, "path", "",
     "`kerncap run --check CMD`: the run's folder (its records, stdout.txt, stderr.txt)", nullptr, nullptr},
    {Var::RunStdout, "KERNCAP_RUN_STDOUT", kCheckCommand, true, "path", "",
     "`kerncap run --check CMD`: the file holding what the application printed on stdout in that run", nullptr,
     nullptr},
}};

std::string readers_text(unsigned r) {
  std::string s;
  for (const auto& n : reader_names(r)) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::string_view to_string(MatchKind m) {
  switch (m) {
    case MatchKind::Regex: return "regex";
    case MatchKind::Exact: return "exact";
    case MatchKind::Substring: break;
  }
  return "substring";
}

std::optional<MatchKind> match_kind_from_string(std::string_view s) {
  for (MatchKind m : {MatchKind::Substring, MatchKind::Regex, MatchKind::Exact})
    if (to_string(m) == s) return m;
  return std::nullopt;
}

std::vector<TargetSpec> effective_targets(const Config& c) {
  if (!c.targets.empty()) return c.targets;
  if (c.kernel.empty()) return {};
  return {TargetSpec{c.kernel, c.regex ? MatchKind::Regex : MatchKind::Substring, c.dispatch, c.output}};
}

Config config_for_target(const Config& run, int target) {
  if (target < 0 || static_cast<size_t>(target) >= run.targets.size()) return run;
  Config c = run;
  const TargetSpec& t = run.targets[target];
  c.output = t.output;
  c.kernel = t.kernel;
  c.regex = t.match == MatchKind::Regex;
  c.exact = t.match == MatchKind::Exact;
  c.dispatch = t.dispatch;
  c.target_index = target;
  c.targets.clear();
  return c;
}

std::string targets_to_text(const std::vector<TargetSpec>& targets) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : targets)
    list.push_back({{"kernel", t.kernel}, {"match", to_string(t.match)}, {"dispatch", t.dispatch}, {"output", t.output}});
  return nlohmann::json{{"version", kTargetsVersion}, {"targets", list}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Read inside the application: never throws, takes a value only when it is exactly right.
std::string targets_from_text(std::string_view text, std::vector<TargetSpec>* out) {
  out->clear();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "is not a JSON object";
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_unsigned() || v->get<uint64_t>() != kTargetsVersion)
    return fmt::format("has another version than {} (the launcher and the library come from different builds)",
                       kTargetsVersion);
  auto list = j.find("targets");
  if (list == j.end() || !list->is_array() || list->empty() || list->size() > kMaxTargets)
    return fmt::format("needs a \"targets\" array of 1 to {} targets", kMaxTargets);
  std::vector<TargetSpec> targets;
  for (const auto& e : *list) {
    if (!e.is_object()) return "has a target that is not an object";
    auto k = e.find("kernel");
    auto m = e.find("match");
    auto d = e.find("dispatch");
    auto o = e.find("output");
    if (k == e.end() || !k->is_string() || k->get<std::string>().empty()) return "has a target without a kernel";
    if (o == e.end() || !o->is_string() || o->get<std::string>().empty()) return "has a target without an output";
    if (d == e.end() || !d->is_number_unsigned()) return "has a target without a dispatch count";
    std::optional<MatchKind> mk = m != e.end() && m->is_string() ? match_kind_from_string(m->get<std::string>())
                                                                 : std::nullopt;
    if (!mk) return "has a target whose match is not substring, regex or exact";
    targets.push_back({k->get<std::string>(), *mk, d->get<uint64_t>(), o->get<std::string>()});
  }
  *out = std::move(targets);
  return "";
}

std::string profile_params_to_text(const std::vector<KernelPattern>& kernels) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& k : kernels) list.push_back({{"kernel", k.kernel}, {"match", to_string(k.match)}});
  return nlohmann::json{{"version", kProfileParamsVersion}, {"kernels", list}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Read inside the application: never throws, takes a value only when it is exactly right.
std::string profile_params_from_text(std::string_view text, std::vector<KernelPattern>* out) {
  out->clear();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return "is not a JSON object";
  auto v = j.find("version");
  if (v == j.end() || !v->is_number_unsigned() || v->get<uint64_t>() != kProfileParamsVersion)
    return fmt::format("has another version than {} (the launcher and the library come from different builds)",
                       kProfileParamsVersion);
  auto list = j.find("kernels");
  if (list == j.end() || !list->is_array() || list->empty() || list->size() > kMaxTargets)
    return fmt::format("needs a \"kernels\" array of 1 to {} patterns", kMaxTargets);
  std::vector<KernelPattern> kernels;
  for (const auto& e : *list) {
    if (!e.is_object()) return "has a kernel that is not an object";
    auto k = e.find("kernel");
    auto m = e.find("match");
    if (k == e.end() || !k->is_string() || k->get<std::string>().empty()) return "has an entry without a kernel";
    std::optional<MatchKind> mk = m != e.end() && m->is_string() ? match_kind_from_string(m->get<std::string>())
                                                                 : std::nullopt;
    if (!mk) return "has an entry whose match is not substring, regex or exact";
    kernels.push_back({k->get<std::string>(), *mk});
  }
  *out = std::move(kernels);
  return "";
}

std::string_view to_string(Mode m) {
  switch (m) {
    case Mode::Capture: return "capture";
    case Mode::Profile: return "profile";
    case Mode::Off: break;
  }
  return "off";
}

std::span<const EnvVar> env_vars() { return kVars; }

const EnvVar& env_var(Var v) {
  for (const auto& e : kVars)
    if (e.id == v) return e;
  return kVars[0];  // unreachable: every Var has a row (a unit test checks)
}

std::string_view env_name(Var v) { return env_var(v).name; }

std::vector<std::string> reader_names(unsigned r) {
  std::vector<std::string> out;
  if (r & kLibrary) out.push_back("library");
  if (r & kCli) out.push_back("cli");
  if (r & kTritonShim) out.push_back("triton-shim");
  if (r & kPythonApi) out.push_back("python-api");
  if (r & kCheckCommand) out.push_back("check-command");
  return out;
}

Config config_from_env(const EnvLookup& lookup, std::vector<std::string>* problems) {
  Config c;
  auto problem = [&](std::string p) {
    if (problems) problems->push_back(std::move(p));
  };
  for (const auto& v : kVars) {
    if (!v.parse) continue;
    const char* value = lookup(v.name);
    if (!value || !*value) continue;
    if (std::string why = v.parse(value, c); !why.empty()) problem(fmt::format("{} {}", v.name, why));
  }
  if (c.mode != Mode::Off && c.output.empty()) {
    problem(fmt::format("{} is not set", env_name(Var::Output)));
    c.mode = Mode::Off;
  }
  if (c.mode == Mode::Capture && c.kernel.empty() && c.targets.empty() && !c.window_graph &&
      c.window_range.empty()) {
    problem(fmt::format("{} is not set", env_name(Var::Kernel)));
    c.mode = Mode::Off;
  }
  return c;
}

std::map<std::string, std::string> Config::to_env() const {
  std::map<std::string, std::string> env;
  for (const auto& v : kVars)
    if (v.print)
      if (auto value = v.print(*this)) env.emplace(v.name, *value);
  return env;
}

nlohmann::json Config::to_json() const {
  nlohmann::json j = {{"mode", std::string(to_string(mode))},
          {"kernel", kernel},
          {"regex", regex},
          {"match", to_string(exact ? MatchKind::Exact : regex ? MatchKind::Regex : MatchKind::Substring)},
          {"dispatch", dispatch},
          {"continue", keep_running},
          {"rank", rank},
          {"device", device},
          {"chunk_bytes", chunk_bytes},
          {"staging_bytes", staging_bytes},
          {"device_scan", device_scan},
          {"closure", closure_all ? "all" : "reachable"},
          {"store", store},
          {"zstd_level", zstd_level},
          {"in_app_time", in_app_name(in_app_time)}};
  if (target_index >= 0) j["target"] = target_index;
  if (!window_end.empty()) j["window"] = {{"end", window_end}, {"end_dispatch", window_end_dispatch}};
  if (window_graph) j["window"] = {{"graph_launch", window_graph_launch}, {"graph_kernel", window_graph_kernel}};
  if (!window_range.empty()) j["window"] = {{"range", window_range}, {"range_push", window_range_occurrence}};
  return j;
}

std::optional<std::string> store_from_env() {
  const char* v = std::getenv(std::string(env_name(Var::Store)).c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> serve_from_env() {
  const char* v = std::getenv(std::string(env_name(Var::Serve)).c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string env_text() {
  std::string s = fmt::format("KERNCAP_* variables (protocol {}; docs/env.md has the full table)\n", kProtocolVersion);
  for (const auto& v : kVars) {
    s += fmt::format("{:<24} {}", v.name, v.meaning);
    if (!v.default_text.empty()) s += fmt::format(" (default {})", v.default_text);
    s += fmt::format(" [{}]\n", readers_text(v.readers));
  }
  return s;
}

nlohmann::json env_json() {
  nlohmann::json vars = nlohmann::json::array();
  for (const auto& v : kVars)
    vars.push_back({{"name", v.name},
                    {"readers", reader_names(v.readers)},
                    {"set_by_launcher", v.set_by_launcher},
                    {"values", v.syntax},
                    {"default", v.default_text},
                    {"meaning", v.meaning}});
  return {{"protocol", kProtocolVersion}, {"variables", vars}};
}

std::string env_markdown() {
  std::string s =
      "# Environment variables\n\n"
      "<!-- Generated by `kerncap env --markdown` from src/format/protocol.cpp; a unit test fails when this\n"
      "     file differs. Edit the table there, then regenerate. -->\n\n"
      "`kerncap extract` and `kerncap profile` start the application with these variables set\n"
      "(\"set by kerncap\"); the others are for you to set. The injected library reads its own\n"
      "in one place (src/capture/config.cpp); malformed values are reported and keep their\n"
      "default. " +
      fmt::format("Protocol version {} (the first event the library writes carries it; `kerncap`\n",
                  kProtocolVersion) +
      "refuses a library of another protocol).\n\n"
      "| variable | read by | set by | values | default | meaning |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  for (const auto& v : kVars)
    s += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", v.name, readers_text(v.readers),
                     v.set_by_launcher ? "kerncap" : "you", v.syntax,
                     v.default_text.empty() ? "unset" : fmt::format("`{}`", v.default_text), v.meaning);
  return s;
}

}  // namespace kerncap::format
