#pragma once
// Fake CUPTI callback data and fake driver answers for the capture unit tests: what
// CUPTI would hand the injected library, filled by hand, so the capture decisions run
// without a GPU. The parameter structs are CUPTI's own (generated_cuda_meta.h).
#include <cupti.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/seams.hpp"

namespace kerncap::capture::testing {

// One driver-API callback: CUPTI's record plus the storage its pointers point into.
template <typename P>
struct FakeCall {
  P params{};
  CUresult result = CUDA_SUCCESS;
  CUpti_CallbackData cb{};

  explicit FakeCall(const P& p, CUpti_ApiCallbackSite site = CUPTI_API_EXIT, uint32_t correlation = 0)
      : params(p) {
    cb.callbackSite = site;
    cb.functionParams = &params;
    cb.functionReturnValue = &result;
    cb.correlationId = correlation;
  }
  FakeCall(const FakeCall&) = delete;  // cb points into this object
  FakeCall& operator=(const FakeCall&) = delete;
};

// A kernel launch as cuLaunchKernel reports it: entry and exit share a correlation id.
struct FakeLaunch {
  cuLaunchKernel_params params{};
  CUresult result = CUDA_SUCCESS;
  CUpti_CallbackData cb{};

  FakeLaunch(const char* symbol, uint32_t correlation, CUstream stream = nullptr, CUfunction f = nullptr) {
    params.f = f;
    params.gridDimX = params.gridDimY = params.gridDimZ = 1;
    params.blockDimX = params.blockDimY = params.blockDimZ = 1;
    params.hStream = stream;
    cb.callbackSite = CUPTI_API_ENTER;
    cb.functionParams = &params;
    cb.functionReturnValue = &result;
    cb.symbolName = symbol;
    cb.correlationId = correlation;
  }
  FakeLaunch(const FakeLaunch&) = delete;
  FakeLaunch& operator=(const FakeLaunch&) = delete;
  const CUpti_CallbackData* entry() {
    cb.callbackSite = CUPTI_API_ENTER;
    return &cb;
  }
  const CUpti_CallbackData* exit() {
    cb.callbackSite = CUPTI_API_EXIT;
    return &cb;
  }
};

// The driver, as far as the watcher asks it.
struct FakeQueries : LaunchQueries {
  std::map<CUfunction, std::string> names;  // for launches without a symbolName
  std::set<CUstream> capturing;             // streams capturing a CUDA graph
  std::string kernel_name(CUfunction f) override {
    auto it = names.find(f);
    return it == names.end() ? "" : it->second;
  }
  bool stream_is_capturing(CUstream s) override {
    ++capture_queries;
    return capturing.count(s) != 0;
  }
  int capture_queries = 0;
  std::map<CUfunction, const void*> modules;  // a launch handle's module
  std::function<void()> loading;  // runs inside module_of (as a lazy load would)
  const void* module_of(CUfunction f) override {
    if (loading) loading();
    auto it = modules.find(f);
    return it == modules.end() ? nullptr : it->second;
  }
};

// Records what the watcher ordered at the target launch.
struct FakeTarget : TargetCapture {
  struct Begun {
    CUpti_CallbackId cbid;
    std::string mangled;
    uint64_t launch_index;
    uint32_t correlation;
    int target = -1;
    bool stop_after = false;
  };
  bool accept = true;  // false: behave like a capture that failed at BEFORE
  std::vector<Begun> begun;
  std::vector<uint32_t> finished;  // correlation ids of the exits handed over
  std::function<void()> during;  // runs inside begin (kerncap's own work at the capture)
  bool begin(const TargetLaunch& t) override {
    if (during) during();
    begun.push_back({t.cbid, t.mangled, t.launch_index, t.entry->correlationId, t.target, t.stop_after});
    return accept;
  }
  void finish(const CUpti_CallbackData& exit) override { finished.push_back(exit.correlationId); }
};

// A fresh directory under the test's temp dir, removed at the end of the test.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("kerncap-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_ / ".kerncap");
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

// Every event the library wrote into DIR/.kerncap/events-*.jsonl, in order.
inline std::vector<nlohmann::json> read_events(const std::filesystem::path& dir) {
  std::vector<nlohmann::json> out;
  for (const auto& e : std::filesystem::directory_iterator(dir / ".kerncap")) {
    if (e.path().filename().string().rfind("events-", 0) != 0) continue;
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// The events of one kind ("seen", "match", ...).
inline std::vector<nlohmann::json> events_of(const std::filesystem::path& dir, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (auto& e : read_events(dir))
    if (e.value("event", "") == kind) out.push_back(e);
  return out;
}

}  // namespace kerncap::capture::testing
