#pragma once
// The per-process record file of `kerncap profile`: written inside the application by
// libkerncap.so (RecordWriter), read back by the CLI (read_records). Reader and writer
// live here together so the format has one definition; it is versioned and checked.
//
// DIR/profile-<pid>.jsonl, one JSON object per line, "t" says what the line is:
//   header  format, version, pid, ppid, forked_from, exe, cmdline   (always first);
//           rank, rank_source when a launcher variable names the rank (format/rank.hpp)
//   device  id, name, cc [major, minor], sms, memory                (CUPTI device records)
//   name    id, s: a kernel's mangled name, given once, referenced by id from "k" lines
//   k       one kernel execution (see KernelRecord for the keys)
//   m       one memcpy/memset
//   x       c: the correlation id of an API call made inside a benchmark window (the Triton
//           shim's kerncap_ignore_begin/end around autotuner and Inductor benchmarks): its
//           kernels are not the application's own launches (extract does not count them)
//   sampling period, exact, window: timing is sampled (Config::profile_sample); then the
//           "run" lines count the launches and the "k" lines are a sample of them
//   p       n (name id), c (correlation id), w [[slot, offset, size, value], ...]: the parameter
//           signature of one launch of a kernel Config::profile_params names: the words of its
//           parameter buffer that are not pointers (ScalarWord), in buffer order; joined to
//           its "k" line by correlation id (the reader's KernelRecord::signature)
//   run     n (name id), k (launches), c0, c1 (first and last correlation id), b (1: inside a
//           benchmark window): consecutive launches of one kernel, in launch order; kernels
//           run by CUDA graph launches are not in runs (their "k" lines count them)
//   error   code, message: why profiling could not run in this process
//   end     reason, kernels, dropped                                 (always last)
// A file without "end" belongs to a process that died before flushing (crash, kill, _exit).
#include <array>
#include <compare>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kerncap::format {

inline constexpr std::string_view kRecordsFormat = "kerncap-profile-records";
inline constexpr int kRecordsVersion = 1;

// One kernel execution as CUPTI reported it. Times are CUPTI timestamps in ns.
struct KernelRecord {
  uint32_t name_id = 0;  // index into ProcessRecords::names
  uint64_t start_ns = 0, end_ns = 0;
  std::array<int32_t, 3> grid{}, block{};
  std::array<uint32_t, 3> cluster{};  // 0 when the launch had no cluster
  uint32_t registers = 0;
  int32_t static_shared = 0, dynamic_shared = 0;
  uint32_t local_per_thread = 0;
  uint32_t stream = 0, device = 0, context = 0, correlation = 0;
  uint32_t graph_id = 0;         // != 0: ran inside a CUDA graph (not a cuLaunchKernel)
  uint64_t graph_node = 0;       // CUPTI's id of its graph node (orders the kernels of one graph launch)
  bool device_launched = false;  // launched from the GPU (dynamic parallelism)
  bool benchmark = false;        // inside a benchmark window ("x" lines): not counted by extract
  int32_t signature = -1;        // index into ProcessRecords::signatures ("p" lines); -1: none recorded
};

// One word of a launch's parameter buffer that is not a pointer to memory the device can
// reach (a size, a stride, a flag): `size` bytes (1..8, little-endian, zero-extended) at
// `offset` bytes into parameter `slot` (its ordinal, from 0). A parameter is cut into 8-byte
// words (a struct passed by value gives several).
struct ScalarWord {
  uint32_t slot = 0, offset = 0, size = 0;
  uint64_t value = 0;
  auto operator<=>(const ScalarWord&) const = default;
};
// The most words one launch's signature holds (the first ones, in buffer order); the
// parameter bytes looked at (a larger buffer's tail is not in the signature).
inline constexpr size_t kMaxScalarWords = 64;
inline constexpr uint32_t kMaxSignatureBytes = 4096;
// Parameter ordinals and offsets lie below it (CUDA allows 32,764 bytes of parameters).
inline constexpr uint32_t kMaxWordOffset = 32764;

// Consecutive launches of one kernel, counted by the library's launch callback when timing
// is sampled ("run" lines).
struct LaunchRun {
  uint32_t name_id = 0;
  uint64_t count = 0;
  uint32_t first_correlation = 0, last_correlation = 0;
  bool benchmark = false;  // made inside a benchmark window (extract does not count them)
  bool operator==(const LaunchRun&) const = default;
};

struct MemRecord {
  bool memset = false;   // else memcpy
  std::string copy_kind;  // "HtoD", "DtoH", "DtoD", ... (memcpy only)
  uint64_t bytes = 0, start_ns = 0, end_ns = 0;
  uint32_t stream = 0, device = 0, context = 0, correlation = 0;
  uint32_t graph_id = 0;
};

struct DeviceInfo {
  uint32_t id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  uint32_t sms = 0;
  uint64_t memory = 0;
};

struct ProcessInfo {
  int64_t pid = 0, ppid = 0;
  int64_t forked_from = 0;  // != 0: a fork() child of that pid that did not exec
  std::string exe;
  std::vector<std::string> cmdline;
  int64_t rank = -1;        // the process's rank in its job (RANK, ...); -1: not told
  std::string rank_source;  // the variable that told it
};

struct RecordError {
  std::string code;  // "multiple_subscribers", "cupti", ...
  std::string message;
};

// Everything one process wrote.
struct ProcessRecords {
  std::filesystem::path file;
  ProcessInfo info;
  std::vector<DeviceInfo> devices;
  std::vector<std::string> names;  // mangled kernel names, by name_id
  std::vector<KernelRecord> kernels;
  std::vector<MemRecord> memops;
  std::vector<RecordError> errors;
  bool complete = false;   // the "end" line was written
  std::string end_reason;  // "exit", ...
  uint64_t dropped = 0;    // records CUPTI dropped (buffers full)
  // Sampled timing ("sampling" line): N of Config::profile_sample, 0 when every launch was
  // timed. Then `runs` count every launch made with cuLaunchKernel & co., and `kernels`
  // hold a sample of those (and every kernel of a graph launch).
  uint32_t sample_period = 0;
  std::vector<LaunchRun> runs;
  // The distinct parameter signatures of the "p" lines (KernelRecord::signature), each its
  // scalar words in buffer order.
  std::vector<std::vector<ScalarWord>> signatures;
};

// Reads every profile-*.jsonl in `dir`, sorted by pid. Throws Error(Input) for a file
// of another format or a newer version, naming the file and what to do. A file cut off
// mid-line (the process was killed while writing) keeps what precedes the cut.
std::vector<ProcessRecords> read_records(const std::filesystem::path& dir);
ProcessRecords read_record_file(const std::filesystem::path& file);

// The in-process writer. Every method is thread-safe and never throws: failures are
// logged once and the writer goes quiet (the application must never notice us).
class RecordWriter {
 public:
  // Creates DIR/profile-<pid>.jsonl (never overwriting: -1, -2... on a clash) and writes
  // the header line. Returns false when the file cannot be created.
  bool open(const std::filesystem::path& dir, const ProcessInfo& info);
  void device(const DeviceInfo& d);
  void kernel(std::string_view mangled_name, KernelRecord k);  // k.name_id is assigned here
  void memop(const MemRecord& m);
  // A launch's parameter signature ("p" line), by its correlation id.
  void params(std::string_view mangled_name, uint32_t correlation, const std::vector<ScalarWord>& words);
  // An API call (by correlation id) made inside a benchmark window.
  void benchmark_call(uint32_t correlation);
  // Sampled timing: the "sampling" line (once, at start), a kernel name's id (its "name"
  // line written when new), and completed runs of launches.
  void sampling(uint32_t period, uint64_t exact, uint64_t window);
  uint32_t name_id(std::string_view mangled_name);
  void runs(const std::vector<LaunchRun>& runs);
  void error(std::string_view code, std::string_view message);
  void add_dropped(uint64_t n);
  // Writes the "end" line and closes the file; later records are counted as dropped.
  // In a fork child whose file is not open yet, creates it first.
  void finish(std::string_view reason);
  bool finished() const;
  uint64_t kernels() const;

  // fork() support, called from pthread_atfork handlers: the parent's pending bytes
  // belong to the parent, so the child drops them, closes the parent's file and will
  // write its own profile-<child pid>.jsonl at exit.
  void lock_for_fork();
  void unlock_in_parent();
  void reset_in_child();

 private:
  void put(std::string_view line);  // appends one line (mu_ held)
  void flush_locked();
  bool open_locked();

  mutable std::mutex mu_;
  std::filesystem::path dir_;
  std::filesystem::path path_;
  ProcessInfo info_;
  int fd_ = -1;
  bool failed_ = false;
  bool finished_ = false;
  std::string buf_;
  struct NameHash {
    using is_transparent = void;  // look names up by string_view: no allocation per record
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> names_;
  uint64_t kernels_ = 0, dropped_ = 0;
};

// JSON string literal (quotes included) for `s`; used by the writers in this folder.
std::string json_quote(std::string_view s);

}  // namespace kerncap::format
