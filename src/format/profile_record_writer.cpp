// RecordWriter: runs inside the application (CUPTI's buffer thread, atexit, atfork).
// Plain write(2) on our own buffer rather than stdio, so that a fork child can drop the
// parent's pending bytes instead of writing them a second time.
#include <cerrno>
#include <cstring>
#include <iterator>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/log.hpp"
#include "format/profile_records.hpp"

namespace kerncap::format {
namespace fs = std::filesystem;

namespace {
constexpr size_t kFlushBytes = 1 << 20;
}

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

bool RecordWriter::open(const fs::path& dir, const ProcessInfo& info) {
  std::lock_guard lk(mu_);
  dir_ = dir;
  info_ = info;
  return open_locked();
}

bool RecordWriter::open_locked() {
  if (failed_) return false;
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    std::string name = attempt == 0 ? fmt::format("profile-{}.jsonl", info_.pid)
                                    : fmt::format("profile-{}-{}.jsonl", info_.pid, attempt);
    path_ = dir_ / name;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    log::warn("profile: cannot create {}: {} (this process is not profiled)", path_.string(),
              std::strerror(errno));
    failed_ = true;
    return false;
  }
  std::string cmd = "[";
  for (size_t i = 0; i < info_.cmdline.size(); ++i) {
    if (i) cmd += ',';
    cmd += json_quote(info_.cmdline[i]);
  }
  cmd += ']';
  std::string rank;
  if (info_.rank >= 0) rank = fmt::format(R"(,"rank":{},"rank_source":{})", info_.rank, json_quote(info_.rank_source));
  put(fmt::format(R"({{"t":"header","format":{},"version":{},"pid":{},"ppid":{},"forked_from":{},"exe":{},"cmdline":{}{}}})",
                  json_quote(kRecordsFormat), kRecordsVersion, info_.pid, info_.ppid, info_.forked_from,
                  json_quote(info_.exe), cmd, rank));
  flush_locked();  // the header is on disk even if the process dies right away
  return true;
}

void RecordWriter::put(std::string_view line) {
  buf_.append(line);
  buf_ += '\n';
  if (buf_.size() >= kFlushBytes) flush_locked();
}

void RecordWriter::flush_locked() {
  if (fd_ < 0) {
    buf_.clear();
    return;
  }
  size_t off = 0;
  while (off < buf_.size()) {
    ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      log::warn("profile: writing {} failed: {} (profile of this process is incomplete)",
                path_.string(), std::strerror(errno));
      ::close(fd_);
      fd_ = -1;
      failed_ = true;
      break;
    }
    off += static_cast<size_t>(n);
  }
  buf_.clear();
}

void RecordWriter::device(const DeviceInfo& d) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) return;
  put(fmt::format(R"({{"t":"device","id":{},"name":{},"cc":[{},{}],"sms":{},"memory":{}}})", d.id,
                  json_quote(d.name), d.cc_major, d.cc_minor, d.sms, d.memory));
}

void RecordWriter::kernel(std::string_view mangled_name, KernelRecord k) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) {
    ++dropped_;
    return;
  }
  auto it = names_.find(mangled_name);
  if (it == names_.end()) {
    it = names_.emplace(std::string(mangled_name), static_cast<uint32_t>(names_.size())).first;
    put(fmt::format(R"({{"t":"name","id":{},"s":{}}})", it->second, json_quote(mangled_name)));
  }
  k.name_id = it->second;
  std::string line = fmt::format(
      R"({{"t":"k","n":{},"s":{},"e":{},"g":[{},{},{}],"b":[{},{},{}],"r":{},"ss":{},"ds":{},"st":{},"d":{},"c":{},"corr":{})",
      k.name_id, k.start_ns, k.end_ns, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
      k.registers, k.static_shared, k.dynamic_shared, k.stream, k.device, k.context, k.correlation);
  // Rare fields only when set, to keep the file small.
  if (k.cluster[0]) line += fmt::format(R"(,"cl":[{},{},{}])", k.cluster[0], k.cluster[1], k.cluster[2]);
  if (k.local_per_thread) line += fmt::format(R"(,"lm":{})", k.local_per_thread);
  if (k.graph_id) line += fmt::format(R"(,"gr":{})", k.graph_id);
  if (k.graph_node) line += fmt::format(R"(,"gn":{})", k.graph_node);
  if (k.device_launched) line += R"(,"dl":1)";
  line += '}';
  put(line);
  ++kernels_;
}

void RecordWriter::sampling(uint32_t period, uint64_t exact, uint64_t window) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) return;
  put(fmt::format(R"({{"t":"sampling","period":{},"exact":{},"window":{}}})", period, exact, window));
}

uint32_t RecordWriter::name_id(std::string_view mangled_name) {
  std::lock_guard lk(mu_);
  auto it = names_.find(mangled_name);
  if (it == names_.end()) {
    it = names_.emplace(std::string(mangled_name), static_cast<uint32_t>(names_.size())).first;
    if (fd_ >= 0 && !finished_) put(fmt::format(R"({{"t":"name","id":{},"s":{}}})", it->second, json_quote(mangled_name)));
  }
  return it->second;
}

void RecordWriter::runs(const std::vector<LaunchRun>& runs) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) return;
  for (const auto& r : runs)
    put(fmt::format(R"({{"t":"run","n":{},"k":{},"c0":{},"c1":{}{}}})", r.name_id, r.count, r.first_correlation,
                    r.last_correlation, r.benchmark ? R"(,"b":1)" : ""));
}

void RecordWriter::memop(const MemRecord& m) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) return;
  put(fmt::format(R"({{"t":"m","op":{},"ck":{},"bytes":{},"s":{},"e":{},"st":{},"d":{},"c":{},"corr":{},"gr":{}}})",
                  m.memset ? R"("memset")" : R"("memcpy")", json_quote(m.copy_kind), m.bytes, m.start_ns,
                  m.end_ns, m.stream, m.device, m.context, m.correlation, m.graph_id));
}

void RecordWriter::params(std::string_view mangled_name, uint32_t correlation, const std::vector<ScalarWord>& words) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) return;
  auto it = names_.find(mangled_name);
  if (it == names_.end()) {
    it = names_.emplace(std::string(mangled_name), static_cast<uint32_t>(names_.size())).first;
    put(fmt::format(R"({{"t":"name","id":{},"s":{}}})", it->second, json_quote(mangled_name)));
  }
  std::string line = fmt::format(R"({{"t":"p","n":{},"c":{},"w":[)", it->second, correlation);
  for (size_t i = 0; i < words.size(); ++i)
    fmt::format_to(std::back_inserter(line), "{}[{},{},{},{}]", i ? "," : "", words[i].slot, words[i].offset,
                   words[i].size, words[i].value);
  line += "]}";
  put(line);
}

void RecordWriter::benchmark_call(uint32_t correlation) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) return;
  put(fmt::format(R"({{"t":"x","c":{}}})", correlation));
}

void RecordWriter::error(std::string_view code, std::string_view message) {
  std::lock_guard lk(mu_);
  if (fd_ < 0 || finished_) return;
  put(fmt::format(R"({{"t":"error","code":{},"message":{}}})", json_quote(code), json_quote(message)));
  flush_locked();  // errors matter most when the process then dies
}

void RecordWriter::add_dropped(uint64_t n) {
  std::lock_guard lk(mu_);
  dropped_ += n;
}

void RecordWriter::finish(std::string_view reason) {
  std::lock_guard lk(mu_);
  if (finished_) return;
  if (fd_ < 0 && !dir_.empty()) open_locked();  // a fork child writes its file now
  if (fd_ >= 0) {
    put(fmt::format(R"({{"t":"end","reason":{},"kernels":{},"dropped":{}}})", json_quote(reason), kernels_,
                    dropped_));
    flush_locked();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  finished_ = true;
}

bool RecordWriter::finished() const {
  std::lock_guard lk(mu_);
  return finished_;
}

uint64_t RecordWriter::kernels() const {
  std::lock_guard lk(mu_);
  return kernels_;
}

void RecordWriter::lock_for_fork() { mu_.lock(); }
void RecordWriter::unlock_in_parent() { mu_.unlock(); }

void RecordWriter::reset_in_child() {
  // Runs in the child with mu_ held by this (the only) thread since lock_for_fork.
  buf_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  names_.clear();
  kernels_ = dropped_ = 0;
  finished_ = false;
  failed_ = false;
  info_.forked_from = info_.pid;
  info_.pid = ::getpid();
  info_.ppid = ::getppid();
  mu_.unlock();
}

}  // namespace kerncap::format
