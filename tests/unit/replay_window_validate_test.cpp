// The window verdict's document and text (replay/window_validate.cpp), which `kerncap window
// validate` and the C ABI's kc_window_validate both print: made from a WindowValidation by
// hand (no GPU): a failing region named with its last writer and as a dead intermediate, the
// replacement (a caller's callable) named, the live-out lines, the times and the speed-up.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "replay/window_validate.hpp"

using namespace kerncap;
using namespace kerncap::replay;

namespace {

WindowValidation failing_validation() {
  WindowValidation v;
  format::WindowOp k;
  k.kind = format::WindowOp::Kind::Kernel;
  k.mangled = "fgemm";
  v.window.ops = {k, k, k};
  v.window.in_app_kernels_ns = 15000;
  v.window.in_app_window_ns = 80000;
  RegionVerdict out;
  out.id = 3;
  out.size = 4096;
  out.base = 0x7000;
  out.result.bytes = 4096;
  out.result.mismatches = 16;
  out.result.differing_bytes = 64;
  out.result.first_bad_offset = 4032;
  RegionVerdict t = out;
  t.id = 2;
  t.base = 0x9000;
  v.evaluation.verdict.regions = {out, t};
  format::WindowLiveOut lo;
  lo.horizon = 256;
  lo.launches_observed = 1;
  lo.ended = "application ended";
  format::LiveOutRegion r3;
  r3.id = 3;
  r3.read = true;
  r3.evidence = "launch 9 of fconsume";
  format::LiveOutRegion r2;
  r2.id = 2;
  r2.evidence = "not reached before the application ended (1 launch(es) after the window)";
  lo.regions = {r2, r3};
  v.observed = lo;
  v.live_out_mode = "all";
  Replacement rep;
  rep.from = 1;
  rep.to = 2;
  rep.call = [](CUstream) {};
  rep.call_name = "the Python callable fuse_torch.py:gemm_silu";
  rep.spec = "1..2=" + rep.call_name;
  v.replacement = rep;
  v.last_writer_ops = {{3, 1}};
  v.last_writers = {{3, "the replacement of ops 1..2 (the Python callable fuse_torch.py:gemm_silu)"}};
  v.strength = "window strong: ...";
  v.line = "Result: FAIL (2 of 2 regions differ; window strong: ...)";
  v.timing.iterations = 5;
  v.timing.kernels_ms = 0.0145;
  v.timing.window_ms = 0.0192;
  v.timing.kernels_method = "cupti-activity";
  v.timing.cache = "warm";
  WindowTiming base = v.timing;
  base.kernels_ms = 0.0290;
  base.window_ms = 0.0384;
  v.captured_timing = base;
  v.notes = {"operations 1 to 2 are replaced by the Python callable fuse_torch.py:gemm_silu"};
  return v;
}

}  // namespace

TEST(ReplayWindowValidate, TheTextNamesTheCallableTheWritersAndTheDeadIntermediate) {
  const std::string text = window_verdict_text(failing_validation());
  EXPECT_NE(text.find("window of 3 operations (3 kernels), ops 1 to 2 replaced by the Python callable "
                      "fuse_torch.py:gemm_silu\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("region 3 (4096 B at 0x7000) differs"), std::string::npos) << text;
  EXPECT_NE(text.find("last written by the replacement of ops 1..2 (the Python callable"), std::string::npos) << text;
  // Region 2 was written by no operation here, and the observation saw it dead.
  EXPECT_NE(text.find("region 2 (4096 B at 0x9000) differs"), std::string::npos) << text;
  EXPECT_NE(text.find("last written by no operation of this replay"), std::string::npos) << text;
  EXPECT_NE(text.find("a dead intermediate: not read after the window (not reached"), std::string::npos) << text;
  EXPECT_NE(text.find("speed-up x2.000 (span), x2.000 (kernels)"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 57), "Result: FAIL (2 of 2 regions differ; window strong: ...)\n");
}

TEST(ReplayWindowValidate, TheDocumentIsTheWindowVerdict) {
  const nlohmann::json j = window_verdict_json(failing_validation());
  EXPECT_EQ(j["format"], kWindowVerdictFormat);
  EXPECT_EQ(j["version"], kWindowVerdictVersion);
  EXPECT_EQ(j["result"], "FAIL");
  EXPECT_EQ(j["replacement"], "1..2=the Python callable fuse_torch.py:gemm_silu");
  ASSERT_EQ(j["last_writers"].size(), 1u);
  EXPECT_EQ(j["last_writers"][0]["region"], 3);
  EXPECT_EQ(j["last_writers"][0]["op"], 1);
  ASSERT_EQ(j["dead_differing"].size(), 1u);
  EXPECT_EQ(j["dead_differing"][0]["region"], 2);
  EXPECT_EQ(j["live_out"], "all");
  EXPECT_EQ(j["observation"]["launches_observed"], 1);
  EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["speedup_kernels"].get<double>(), 2.0);
  EXPECT_EQ(j["timing"]["kernels_ratio"].get<double>(), 0.0145 * 1e6 / 15000);
  EXPECT_EQ(j["notes"].size(), 1u);
  EXPECT_FALSE(j.contains("poisoned_regions"));  // --weak: no probe
}

TEST(ReplayWindowValidate, LiveOutListsAreParsedStrictly) {
  format::Manifest m;
  format::Region r;
  r.id = 3;
  m.regions = {r};
  EXPECT_FALSE(parse_window_live_out("all", m, std::nullopt, "d"));
  EXPECT_EQ(*parse_window_live_out("3", m, std::nullopt, "d"), (std::set<uint32_t>{3}));
  EXPECT_THROW(parse_window_live_out("4", m, std::nullopt, "d"), Error);
  EXPECT_THROW(parse_window_live_out("3,,", m, std::nullopt, "d"), Error);
  EXPECT_THROW(parse_window_live_out("auto", m, std::nullopt, "d"), Error);  // no observation
}
