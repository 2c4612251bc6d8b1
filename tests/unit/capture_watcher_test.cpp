// Capture mode's decisions, driven by fake CUPTI callbacks: which launch is the target
// (pattern, regex, dispatch index), claiming across processes, the autotuner ignore
// window, launches into a capturing stream, entry/exit pairing, and what reaches the
// allocation tracker and the image store. No GPU, no driver: LaunchQueries is faked.
#include <gtest/gtest.h>

#include <thread>

#include "capture/events.hpp"
#include "capture/in_app.hpp"
#include "capture/launch_info.hpp"
#include "capture/tool_scope.hpp"
#include "capture/watcher.hpp"
#include "capture_fakes.hpp"
#include "cubin_fixtures.hpp"

using namespace kerncap::capture;
using namespace kerncap::capture::testing;

namespace {

constexpr const char* kScale = "_Z5scalePfi";                        // scale(float*, int)
constexpr const char* kScaleD = "_Z5scaleIdEvPT_i";                  // void scale<double>(double*, int)
constexpr const char* kAdd = "_Z3addPfS_i";                          // add(float*, float*, int)
constexpr const char* kTriton = "triton_poi_fused_add_0";

// One process's capture mode, with the driver and the capture work faked.
struct Harness {
  TempDir dir;
  Config config;
  std::unique_ptr<Inventory> inventory;
  FakeQueries driver;
  FakeTarget target;
  std::unique_ptr<LaunchWatcher> watcher;
  uint32_t next_correlation = 1;

  Harness(std::string kernel, uint64_t dispatch = 0, bool regex = false, const std::filesystem::path* shared = nullptr)
      : dir("watcher") {
    config.mode = Mode::Capture;
    config.output = (shared ? *shared : dir.path()).string();
    config.kernel = std::move(kernel);
    config.regex = regex;
    config.dispatch = dispatch;
    events_open(config.output);
    inventory = std::make_unique<Inventory>(config);
    watcher = std::make_unique<LaunchWatcher>(config, *inventory, driver, target);
  }
  // One launch, entry then exit, as the driver reports it on this thread.
  void launch(const char* symbol, CUstream stream = nullptr) {
    FakeLaunch l(symbol, next_correlation++, stream);
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  }
  std::vector<nlohmann::json> events(const std::string& kind) const { return events_of(config.output, kind); }
  // The driver hands a code image over (CUPTI_CBID_RESOURCE_MODULE_LOADED) on this thread.
  void hand_over(const std::string& bytes) {
    CUpti_ModuleResourceData mod{};
    mod.pCubin = bytes.data();
    mod.cubinSize = bytes.size();
    CUpti_ResourceData rd{};
    rd.resourceDescriptor = &mod;
    watcher->on_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &rd);
  }
};

}  // namespace

TEST(CaptureWatcher, SubstringPatternAndDispatchIndex) {
  Harness h("scale", 2);
  h.launch(kScale);   // launch 0, match 0
  h.launch(kAdd);     // launch 1
  h.launch(kScaleD);  // launch 2, match 1 (the pattern is a substring of both)
  EXPECT_TRUE(h.target.begun.empty());
  h.launch(kScale);  // launch 3, match 2: the target
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].mangled, kScale);
  EXPECT_EQ(h.target.begun[0].launch_index, 3u);
  EXPECT_EQ(h.target.begun[0].cbid, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  EXPECT_EQ(h.target.finished, std::vector<uint32_t>{h.target.begun[0].correlation});
  EXPECT_TRUE(h.watcher->done());
  h.launch(kScale);  // after the capture nothing more is taken or counted
  EXPECT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.watcher->launches(), 4u);

  // Each name is reported once, with whether it matches; each counted match up to the target.
  auto seen = h.events("seen");
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0]["mangled"], kScale);
  EXPECT_EQ(seen[0]["demangled"], "scale(float*, int)");
  EXPECT_EQ(seen[0]["matches"], true);
  EXPECT_EQ(seen[1]["matches"], false);
  auto matches = h.events("match");
  ASSERT_EQ(matches.size(), 3u);
  EXPECT_EQ(matches[2]["index"], 2);
}

TEST(CaptureWatcher, RegexOnEitherForm) {
  Harness h(R"(^void scale<double>|^_Z3add)", 1, true);
  h.launch(kScale);   // matches neither alternative
  h.launch(kAdd);     // match 0 through its mangled name
  h.launch(kScaleD);  // match 1 through its demangled name: the target
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].mangled, kScaleD);
  EXPECT_EQ(h.target.begun[0].launch_index, 2u);
}

TEST(CaptureWatcher, NameFromTheDriverWhenCuptiGivesNone) {
  Harness h("triton_poi");
  CUfunction f = reinterpret_cast<CUfunction>(0x1234);
  h.driver.names[f] = kTriton;
  FakeLaunch l(nullptr, 7, nullptr, f);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].mangled, kTriton);
  // A handle the driver cannot name is not counted at all.
  Harness g("anything");
  FakeLaunch unnamed(nullptr, 8, nullptr, reinterpret_cast<CUfunction>(0x999));
  g.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, unnamed.entry());
  EXPECT_EQ(g.watcher->launches(), 0u);
}

TEST(CaptureWatcher, EveryLaunchEntryPointIsWatched) {
  for (CUpti_CallbackId cbid : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                                CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz}) {
    Harness h("scale");
    FakeLaunch l(kScale, 1);  // cuLaunchCooperativeKernel's parameters share cuLaunchKernel's layout
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, l.entry());
    ASSERT_EQ(h.target.begun.size(), 1u) << cbid;
    EXPECT_EQ(h.target.begun[0].cbid, cbid);
  }
  for (CUpti_CallbackId cbid : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz}) {
    Harness h("scale");
    CUlaunchConfig cfg{};
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    FakeCall<cuLaunchKernelEx_params> l(cuLaunchKernelEx_params{&cfg, nullptr, nullptr, nullptr}, CUPTI_API_ENTER, 1);
    l.cb.symbolName = kScale;
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &l.cb);
    ASSERT_EQ(h.target.begun.size(), 1u) << cbid;
    // Without a launch config there is nothing to decode: not counted.
    Harness g("scale");
    FakeCall<cuLaunchKernelEx_params> bad(cuLaunchKernelEx_params{nullptr, nullptr, nullptr, nullptr}, CUPTI_API_ENTER);
    bad.cb.symbolName = kScale;
    g.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &bad.cb);
    EXPECT_EQ(g.watcher->launches(), 0u);
  }
}

TEST(CaptureWatcher, AfterIsTakenAtTheSameLaunchsExitOnTheSameThread) {
  Harness h("scale");
  FakeLaunch target(kScale, 42);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, target.entry());
  ASSERT_EQ(h.target.begun.size(), 1u);
  // Another launch's exit (another thread launched meanwhile) is not the target's.
  FakeLaunch other(kAdd, 43);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, other.exit());
  // The same correlation id seen on another thread is not it either.
  std::thread([&] {
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, target.exit());
  }).join();
  EXPECT_TRUE(h.target.finished.empty());
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, target.exit());
  EXPECT_EQ(h.target.finished, std::vector<uint32_t>{42});
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, target.exit());
  EXPECT_EQ(h.target.finished.size(), 1u);  // handed over once
}

TEST(CaptureWatcher, AFailedBeforeOwesNoAfterAndEndsTheSearch) {
  Harness h("scale");
  h.target.accept = false;
  h.launch(kScale);
  EXPECT_EQ(h.target.begun.size(), 1u);
  EXPECT_TRUE(h.target.finished.empty());
  EXPECT_TRUE(h.watcher->done());
  h.launch(kScale);
  EXPECT_EQ(h.target.begun.size(), 1u);
}

TEST(CaptureWatcher, OneCaptureAcrossProcesses) {
  TempDir shared("claim");
  Harness first("scale", 0, false, &shared.path());
  Harness second("scale", 0, false, &shared.path());  // another process of the same application
  first.launch(kScale);
  ASSERT_EQ(first.target.begun.size(), 1u);
  std::ifstream claim(shared.path() / ".kerncap" / "claim");
  std::string pid;
  claim >> pid;
  EXPECT_EQ(pid, std::to_string(::getpid()));
  second.launch(kScale);
  EXPECT_TRUE(second.target.begun.empty());
  EXPECT_TRUE(second.watcher->done());  // it stops looking
  second.launch(kScale);
  EXPECT_TRUE(second.target.begun.empty());
}

TEST(CaptureWatcher, AutotunerBenchmarksAreNotCounted) {
  Harness h("scale", 1);
  ignore_begin();
  ignore_begin();  // nested windows
  h.launch(kScale);
  h.launch(kScale);
  ignore_end();
  h.launch(kScale);  // still inside the outer window
  ignore_end();
  EXPECT_EQ(ignore_depth(), 0);
  ignore_end();  // an unmatched end never goes below zero
  EXPECT_EQ(ignore_depth(), 0);
  EXPECT_TRUE(h.target.begun.empty());
  EXPECT_TRUE(h.events("match").empty());
  auto ignored = h.events("ignored");
  ASSERT_EQ(ignored.size(), 1u);  // once per name
  EXPECT_EQ(ignored[0]["why"], "autotuner benchmark");
  h.launch(kScale);  // match 0
  h.launch(kScale);  // match 1: the target
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].launch_index, 4u);  // ignored launches are still launches
}

TEST(CaptureWatcher, LaunchesIntoACapturingStreamAreSkipped) {
  Harness h("scale");
  CUstream graph_stream = reinterpret_cast<CUstream>(0x50);
  h.launch(kAdd);  // no capture open: the driver is not asked about the stream
  EXPECT_EQ(h.driver.capture_queries, 0);
  h.driver.capturing.insert(graph_stream);
  FakeCall<cuStreamBeginCapture_v2_params> begin(cuStreamBeginCapture_v2_params{graph_stream, {}});
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, &begin.cb);
  h.launch(kScale, graph_stream);
  h.launch(kScale, graph_stream);
  EXPECT_TRUE(h.target.begun.empty());
  auto skipped = h.events("skipped");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0]["why"], "stream is capturing a CUDA graph");
  h.driver.capturing.erase(graph_stream);
  FakeCall<cuStreamEndCapture_params> end(cuStreamEndCapture_params{graph_stream, nullptr});
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture, &end.cb);
  const int asked = h.driver.capture_queries;
  h.launch(kScale);  // the direct launch afterwards is dispatch 0, and the capture is over: nothing asked
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].launch_index, 3u);
  EXPECT_EQ(h.driver.capture_queries, asked);
}

TEST(CaptureWatcher, GraphLaunchesAreReportedOnce) {
  Harness h("scale");
  FakeCall<int> g(0, CUPTI_API_ENTER);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &g.cb);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, &g.cb);
  EXPECT_EQ(h.events("graph_launch").size(), 1u);
}

TEST(CaptureWatcher, KerncapsOwnCallsAreNotTheApplications) {
  Harness h("scale");
  {
    ToolScope inside;  // as while kerncap itself calls the driver
    h.launch(kScale);
    CUdeviceptr d = 0x4000;
    FakeCall<cuMemAlloc_v2_params> alloc(cuMemAlloc_v2_params{&d, 64});
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &alloc.cb);
  }
  EXPECT_EQ(h.watcher->launches(), 0u);
  EXPECT_TRUE(h.inventory->tracker.live().empty());
}

TEST(CaptureWatcher, AllocationsReachTheTracker) {
  Harness h("scale");
  CUdeviceptr d = 0x7f0000001000;
  FakeCall<cuMemAlloc_v2_params> alloc(cuMemAlloc_v2_params{&d, 4096});
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &alloc.cb);
  ASSERT_EQ(h.inventory->tracker.live().size(), 1u);
  FakeCall<cuMemFree_v2_params> free_(cuMemFree_v2_params{d});
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &free_.cb);
  EXPECT_TRUE(h.inventory->tracker.live().empty());
}

TEST(CaptureWatcher, MatchingKernelsInLoadedCodeThatTheHostNeverLaunchedAreReportedAtExit) {
  KC_NEED_FIXTURES();
  const auto cubin = kerncap::cubin::testing::fixture("bounds128_sm90.cubin");  // holds kc_scale
  const std::string bytes(cubin.begin(), cubin.end());
  {
    Harness h("kc_scale");
    h.hand_over(bytes);
    h.launch(kAdd);  // the host launches only another kernel (say, the parent of kc_scale)
    h.watcher->report_unlaunched_kernels();
    const auto lines = h.events("unlaunched");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["mangled"], "kc_scale");
    EXPECT_EQ(lines[0]["demangled"], "kc_scale");
  }
  {
    // Launched (though not up to the dispatch): nothing to report.
    Harness h("kc_scale", 5);
    h.hand_over(bytes);
    h.launch("kc_scale");
    h.watcher->report_unlaunched_kernels();
    EXPECT_TRUE(h.events("unlaunched").empty());
  }
  {
    // A pattern the image's kernels do not match: nothing either.
    Harness h("scale<double>");
    h.hand_over(bytes);
    h.watcher->report_unlaunched_kernels();
    EXPECT_TRUE(h.events("unlaunched").empty());
  }
}

TEST(CaptureWatcher, ModuleLoadsBindTheirImage) {
  Harness h("scale");
  // An image kerncap cannot read (not a cubin): kept, since it might hold the target.
  const std::string bytes(256, 'x');
  CUmodule handle = reinterpret_cast<CUmodule>(0x77);
  FakeCall<cuModuleLoadData_params> load(cuModuleLoadData_params{&handle, bytes.data()}, CUPTI_API_ENTER);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &load.cb);
  h.hand_over(bytes);
  load.cb.callbackSite = CUPTI_API_EXIT;
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &load.cb);
  EXPECT_EQ(h.inventory->images.loaded(), 1u);
  const KeptImage* img = h.inventory->images.find(kScale, {}, handle);
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->bytes.size(), bytes.size());
  // Module loads count even inside kerncap's own calls (lazy loading happens there).
  ToolScope inside;
  h.hand_over(bytes);
  EXPECT_EQ(h.inventory->images.loaded(), 2u);
}

TEST(CaptureWatcher, AnImageHandedOverAtFirstUseIsBoundToItsModule) {
  Harness h("scale");
  const std::string first(256, 'a'), second(256, 'b');
  // Lazy loading: both loads return before their images arrive, so neither binds.
  CUmodule m1 = reinterpret_cast<CUmodule>(0x71), m2 = reinterpret_cast<CUmodule>(0x72);
  for (CUmodule* m : {&m1, &m2}) {
    FakeCall<cuModuleLoadData_params> load(cuModuleLoadData_params{m, first.data()}, CUPTI_API_ENTER);
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &load.cb);
    load.cb.callbackSite = CUPTI_API_EXIT;
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, &load.cb);
  }
  // Each image arrives inside the cuModuleGetFunction of its module, the first loaded last.
  CUfunction f = nullptr;
  for (auto [m, bytes] : {std::pair{m2, &second}, std::pair{m1, &first}}) {
    FakeCall<cuModuleGetFunction_params> get(cuModuleGetFunction_params{&f, m, "scale"}, CUPTI_API_ENTER);
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, &get.cb);
    h.hand_over(*bytes);
    get.cb.callbackSite = CUPTI_API_EXIT;
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, &get.cb);
  }
  ASSERT_EQ(h.inventory->images.loaded(), 2u);
  // Load order alone would say `first` (handed over last) for both modules.
  ASSERT_NE(h.inventory->images.find(kScale, {}, m2), nullptr);
  EXPECT_EQ(h.inventory->images.find(kScale, {}, m2)->bytes[0], 'b');
  EXPECT_EQ(h.inventory->images.find(kScale, {}, m1)->bytes[0], 'a');
  // A later lookup that loads nothing leaves the binding alone.
  FakeCall<cuModuleGetFunction_params> again(cuModuleGetFunction_params{&f, m2, "scale"}, CUPTI_API_ENTER);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, &again.cb);
  again.cb.callbackSite = CUPTI_API_EXIT;
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, &again.cb);
  EXPECT_EQ(h.inventory->images.find(kScale, {}, m2)->bytes[0], 'b');
}

TEST(CaptureWatcher, AnImageHandedOverInsideALaunchIsBoundToTheLaunchedModule) {
  Harness h("scale", 5);
  const std::string first(256, 'a'), second(256, 'b');
  CUmodule m1 = reinterpret_cast<CUmodule>(0x81), m2 = reinterpret_cast<CUmodule>(0x82);
  CUfunction f1 = reinterpret_cast<CUfunction>(0x910), f2 = reinterpret_cast<CUfunction>(0x920);
  h.driver.modules = {{f1, m1}, {f2, m2}};
  // A runtime launch of a CUkernel is its module's first use: the image arrives inside it.
  for (auto [f, bytes] : {std::pair{f2, &second}, std::pair{f1, &first}}) {
    FakeLaunch l(kScale, h.next_correlation++, nullptr, f);
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    h.hand_over(*bytes);
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  }
  ASSERT_EQ(h.inventory->images.loaded(), 2u);
  // Load order alone would say `first` (handed over last) for both modules.
  ASSERT_NE(h.inventory->images.find(kScale, {}, m2), nullptr);
  EXPECT_EQ(h.inventory->images.find(kScale, {}, m2)->bytes[0], 'b');
  EXPECT_EQ(h.inventory->images.find(kScale, {}, m1)->bytes[0], 'a');
  // A launch during which nothing loads binds nothing, whatever came before it on the thread.
  CUfunction f3 = reinterpret_cast<CUfunction>(0x930);
  h.driver.modules[f3] = m2;
  FakeLaunch later(kScale, h.next_correlation++, nullptr, f3);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, later.entry());
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, later.exit());
  EXPECT_EQ(h.inventory->images.find(kScale, {}, m2)->bytes[0], 'b');
}

TEST(CaptureWatcher, TheTargetsModuleLoadedByKerncapsOwnQueryIsBoundToIt) {
  Harness h("scale");
  const std::string launched(256, 'b'), own(256, 'a');
  auto hand_over = [&](const std::string& bytes) {
    ToolScope inside;  // both arrive inside kerncap's own driver calls
    h.hand_over(bytes);
  };
  CUmodule m = reinterpret_cast<CUmodule>(0x83);
  CUfunction f = reinterpret_cast<CUfunction>(0x940);
  h.driver.modules[f] = m;
  h.driver.loading = [&] { hand_over(launched); };  // the module's first use is kerncap's query
  h.target.during = [&] { hand_over(own); };        // then the capture loads an image of its own
  FakeLaunch l(kScale, h.next_correlation++, nullptr, f);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
  h.driver.loading = nullptr;
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  ASSERT_EQ(h.target.begun.size(), 1u);
  ASSERT_EQ(h.inventory->images.loaded(), 2u);
  // Load order alone would say `own`; the module's binding says the launched image.
  ASSERT_NE(h.inventory->images.find(kScale, {}, m), nullptr);
  EXPECT_EQ(h.inventory->images.find(kScale, {}, m)->bytes[0], 'b');
}

namespace {
int g_first_match_calls = 0;
void count_first_match() { ++g_first_match_calls; }
}  // namespace

TEST(CaptureWatcher, KnownHandlesThatCannotBeTheTargetTakeTheFastPath) {
  Harness h("scale", 1);
  g_first_match_calls = 0;
  h.watcher->on_in_app_window(&count_first_match);
  CUfunction add = reinterpret_cast<CUfunction>(0xadd), scale = reinterpret_cast<CUfunction>(0x5ca1e);
  h.driver.names[add] = kAdd;  // asked only when CUPTI gives no name
  auto launch = [&](CUfunction f, const char* symbol) {
    FakeLaunch l(symbol, h.next_correlation++, nullptr, f);
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.exit());
  };
  for (int i = 0; i < 100; ++i) launch(add, nullptr);  // the name is looked up once, then the handle answers
  EXPECT_EQ(h.watcher->launches(), 100u);
  EXPECT_EQ(h.events("seen").size(), 1u);
  EXPECT_EQ(g_first_match_calls, 0);  // nothing matched yet: no kernel records needed
  // A handle whose name the driver no longer knows is still skipped: the verdict is cached.
  h.driver.names.erase(add);
  launch(add, nullptr);
  EXPECT_EQ(h.watcher->launches(), 101u);
  launch(scale, kScale);  // match 0, launch 101
  EXPECT_EQ(g_first_match_calls, 1);
  launch(add, kAdd);
  launch(scale, kScale);  // match 1: the target
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].launch_index, 103u);
  EXPECT_EQ(g_first_match_calls, 1);  // once
}

TEST(CaptureWatcher, InAppRecordsStartNearAFarDispatch) {
  const uint64_t dispatch = kInAppLead + 100;
  Harness h("scale", dispatch);
  g_first_match_calls = 0;
  h.watcher->on_in_app_window(&count_first_match);
  for (uint64_t i = 0; i < 100; ++i) h.launch(kScale);  // matches 0..99: too early, no records
  EXPECT_EQ(g_first_match_calls, 0);
  h.launch(kAdd);
  EXPECT_EQ(g_first_match_calls, 0);
  h.launch(kScale);  // match 100 = dispatch - kInAppLead: the window opens before this launch
  EXPECT_EQ(g_first_match_calls, 1);
  for (uint64_t i = 101; i < dispatch; ++i) h.launch(kScale);
  EXPECT_TRUE(h.target.begun.empty());
  h.launch(kScale);  // the target
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(g_first_match_calls, 1);  // once
  // The window always holds kInAppLead launches, more than the in-app time keeps of one shape.
  static_assert(kInAppLead > InAppTimes::kKeep);
  EXPECT_EQ(in_app_window_start(0), 0u);
  EXPECT_EQ(in_app_window_start(kInAppLead), 0u);
  EXPECT_EQ(in_app_window_start(kInAppLead + 1), 1u);
}

TEST(CaptureWatcher, InAppRecordsWaitForACountedMatch) {
  // Matches that are not counted (an autotuner's benchmark) do not open the window.
  Harness h("scale", 0);
  g_first_match_calls = 0;
  h.watcher->on_in_app_window(&count_first_match);
  ignore_begin();
  h.launch(kScale);
  ignore_end();
  EXPECT_EQ(g_first_match_calls, 0);
  h.launch(kScale);  // match 0, the target: records on before it is made
  EXPECT_EQ(g_first_match_calls, 1);
  ASSERT_EQ(h.target.begun.size(), 1u);
}

TEST(CaptureWatcher, UnloadingForgetsTheHandles) {
  Harness h("scale", 0);
  CUfunction f = reinterpret_cast<CUfunction>(0x1000);
  for (uint32_t c : {1u, 2u}) {  // not a match: remembered as skipped, then skipped from the thread's cache
    FakeLaunch l(kAdd, c, nullptr, f);
    h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
  }
  // The module goes; a new one gives a matching kernel the same handle.
  FakeCall<cuModuleUnload_params> unload(cuModuleUnload_params{nullptr}, CUPTI_API_EXIT);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, &unload.cb);
  FakeLaunch l(kScale, 3, nullptr, f);
  h.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
  ASSERT_EQ(h.target.begun.size(), 1u);
  EXPECT_EQ(h.target.begun[0].mangled, kScale);
  EXPECT_EQ(h.target.begun[0].launch_index, 2u);
}

TEST(CaptureWatcher, AnotherWatchersSkippedHandleIsNotSkipped) {
  CUfunction f = reinterpret_cast<CUfunction>(0x2000);
  {
    Harness a("scale", 0);  // add is skipped here, twice (the second from the thread's cache)
    for (uint32_t c : {1u, 2u}) {
      FakeLaunch l(kAdd, c, nullptr, f);
      a.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
    }
    EXPECT_EQ(a.watcher->launches(), 2u);
  }
  Harness b("add", 0);  // a new watcher, perhaps at the same address: the same handle is its target
  FakeLaunch l(kAdd, 1, nullptr, f);
  b.watcher->on_callback(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, l.entry());
  ASSERT_EQ(b.target.begun.size(), 1u);
  EXPECT_EQ(b.target.begun[0].launch_index, 0u);
}

TEST(CaptureWatcher, EveryLaunchCallbackIdIsALaunch) {
  for (CUpti_CallbackId id : launch_callback_ids()) EXPECT_TRUE(is_launch_cbid(id)) << id;
  for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                              CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction, CUPTI_DRIVER_TRACE_CBID_INVALID})
    EXPECT_FALSE(is_launch_cbid(id)) << id;
}

TEST(CaptureWatcher, MatchEventsAreSparseAndTheLastComesAtExit) {
  Harness h("scale", 100);
  for (int i = 0; i < 40; ++i) h.launch(kScale);
  auto matches = h.events("match");
  ASSERT_EQ(matches.size(), 18u);  // 0..15, 16, 32: not one write per launch
  EXPECT_EQ(matches[16]["index"], 16);
  EXPECT_EQ(matches[17]["index"], 32);
  h.watcher->report_matches();  // at exit: how far the count got
  matches = h.events("match");
  ASSERT_EQ(matches.size(), 19u);
  EXPECT_EQ(matches.back()["index"], 39);
  EXPECT_EQ(matches.back()["mangled"], kScale);
  h.watcher->report_matches();  // once
  EXPECT_EQ(h.events("match").size(), 19u);
}
