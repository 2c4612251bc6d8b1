// Baseline files (versioned JSON in OUT/baselines) and the regression rules of `kerncap diff`.
#include <gtest/gtest.h>

#include <fstream>

#include "common/error.hpp"
#include "lint/baseline.hpp"
#include "lint_fixtures.hpp"

namespace kerncap::lint {
namespace {

namespace fs = std::filesystem;

Baseline sample() {
  Baseline b;
  b.name = "base";
  b.created = "2026-11-24T06:00:00Z";
  b.tool_version = "0.1.0";
  b.kernel = "_Z9vectorAddPKfS0_Pfi";
  b.image = "OUT/capture/image/1.cubin";
  b.image_xxh64 = "0x1234";
  b.gpu = "NVIDIA H100 80GB HBM3";
  b.sm = 90;
  b.driver_version = 13000;
  b.median_ms = 1.0;
  b.min_ms = 0.98;
  b.max_ms = 1.05;
  b.stddev_ms = 0.01;
  b.iterations = 50;
  b.warmup = 3;
  b.registers = 16;
  b.local_bytes = 0;
  b.shared_static_bytes = 0;
  b.spill_instructions = 0;
  b.occupancy = 1.0;
  b.validation_pass = true;
  return b;
}

const DiffRow& row(const DiffReport& d, const std::string& metric) {
  for (const DiffRow& r : d.rows)
    if (r.metric == metric) return r;
  throw std::runtime_error("no row " + metric);
}

TEST(LintBaseline, JsonRoundTrip) {
  Baseline b = sample();
  b.spill_instructions.reset();
  const Baseline r = baseline_from_json(to_json(b), "x");
  EXPECT_EQ(to_json(r), to_json(b));
  EXPECT_FALSE(r.spill_instructions);
  EXPECT_EQ(to_json(b)["version"], kBaselineVersion);
}

TEST(LintBaseline, RefusesNewerVersionsAndMissingFields) {
  nlohmann::json j = to_json(sample());
  j["version"] = kBaselineVersion + 1;
  EXPECT_THROW(baseline_from_json(j, "x"), Error);
  j = to_json(sample());
  j["time_ms"].erase("median");
  try {
    baseline_from_json(j, "OUT/baselines/base.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("OUT/baselines/base.json: missing \"median\""), std::string::npos) << e.what();
  }
  j = to_json(sample());
  j["format"] = "something";
  EXPECT_THROW(baseline_from_json(j, "x"), Error);
}

TEST(LintBaseline, SaveLoadAndNames) {
  testing::TempDir out;
  save_baseline(out.path() / "capture", sample());  // OUT/capture names OUT
  EXPECT_TRUE(fs::exists(out.path() / "baselines" / "base.json"));
  EXPECT_EQ(to_json(load_baseline(out.path(), "base")), to_json(sample()));
  try {
    load_baseline(out.path(), "other");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("have: base"), std::string::npos) << e.what();
  }
  EXPECT_THROW(baseline_path(out.path(), "../x"), Error);
  EXPECT_THROW(baseline_path(out.path(), ""), Error);
  EXPECT_NO_THROW(baseline_path(out.path(), "v1.2_fast-path"));
}

TEST(LintBaseline, SameMeasurementIsNoRegression) {
  const DiffReport d = diff(sample(), sample());
  EXPECT_FALSE(d.regression());
  EXPECT_EQ(row(d, "time (median)").change, Change::Same);
  EXPECT_EQ(row(d, "registers").change, Change::Same);
  EXPECT_DOUBLE_EQ(d.speedup, 1.0);
  EXPECT_EQ(to_json(d)["line"], "Result: NO REGRESSION");
}

TEST(LintBaseline, TimeWithinNoiseIsSame) {
  Baseline cur = sample();
  cur.median_ms = 1.025;  // below 3% of 1.0 ms
  EXPECT_EQ(row(diff(sample(), cur), "time (median)").change, Change::Same);
  cur.median_ms = 1.05;  // 5%: beyond 3% and beyond 3 x sqrt(2) x 0.01
  EXPECT_EQ(row(diff(sample(), cur), "time (median)").change, Change::Worse);
  EXPECT_TRUE(diff(sample(), cur).regression());
  EXPECT_EQ(to_json(diff(sample(), cur))["line"], "Result: REGRESSION");
  cur.stddev_ms = 0.05;  // noisy now: 3 x sqrt(0.01^2 + 0.05^2) = 0.153 ms
  EXPECT_EQ(row(diff(sample(), cur), "time (median)").change, Change::Same);
}

TEST(LintBaseline, FasterIsBetterWithItsSpeedup) {
  Baseline cur = sample();
  cur.median_ms = 0.5;
  const DiffReport d = diff(sample(), cur);
  EXPECT_EQ(row(d, "time (median)").change, Change::Better);
  EXPECT_DOUBLE_EQ(d.speedup, 2.0);
  EXPECT_NE(row(d, "time (median)").delta.find("x2.000 speed-up"), std::string::npos);
  EXPECT_FALSE(d.regression());
}

TEST(LintBaseline, TimeOnAnotherGpuIsNotCompared) {
  Baseline cur = sample();
  cur.gpu = "NVIDIA H200";
  cur.median_ms = 3.0;
  const DiffReport d = diff(sample(), cur);
  EXPECT_EQ(row(d, "time (median)").change, Change::Info);
  EXPECT_FALSE(d.regression());
}

TEST(LintBaseline, ResourcesAndValidationRegress) {
  Baseline cur = sample();
  cur.registers = 40;
  DiffReport d = diff(sample(), cur);
  EXPECT_EQ(row(d, "registers").change, Change::Worse);
  EXPECT_EQ(row(d, "registers").delta, "+24");
  cur = sample();
  cur.spill_instructions = 12;
  EXPECT_EQ(row(diff(sample(), cur), "spills (STL+LDL)").change, Change::Worse);
  cur.spill_instructions.reset();  // unknown on one side: shown, not judged
  EXPECT_EQ(row(diff(sample(), cur), "spills (STL+LDL)").change, Change::Info);
  cur = sample();
  cur.occupancy = 0.5;
  EXPECT_EQ(row(diff(sample(), cur), "occupancy").change, Change::Worse);
  cur = sample();
  cur.local_bytes = 64;
  EXPECT_EQ(row(diff(sample(), cur), "local memory (B)").change, Change::Worse);
  cur = sample();
  cur.validation_pass = false;
  cur.max_abs_error = 0.5;
  d = diff(sample(), cur);
  EXPECT_EQ(row(d, "validation").change, Change::Worse);
  EXPECT_TRUE(d.regression());
  const std::string text = to_text(d, sample(), cur);
  EXPECT_NE(text.find("Result: REGRESSION"), std::string::npos) << text;
  EXPECT_EQ(to_json(d)["regression"], true);
  // Fewer registers is better, not a regression.
  cur = sample();
  cur.registers = 8;
  EXPECT_EQ(row(diff(sample(), cur), "registers").change, Change::Better);
  EXPECT_NE(to_text(diff(sample(), cur), sample(), cur).find("Result: NO REGRESSION"), std::string::npos);
}

TEST(LintBaseline, FuzzAndInvariantsRoundTripAndOlderFilesLackThem) {
  Baseline b = sample();
  b.fuzz = Baseline::Fuzz{false, 20, 7, 2, "Fuzz: FAIL (2 of 20 trials; ...)"};
  b.invariants = Baseline::Invariants{false, "no_nan, must_write", {"no_nan: region 2 (fp32 at +0x0): 1 NaN ..."}};
  const Baseline r = baseline_from_json(to_json(b), "x");
  EXPECT_EQ(to_json(r), to_json(b));
  ASSERT_TRUE(r.fuzz);
  EXPECT_EQ(r.fuzz->trials, 20u);
  EXPECT_EQ(r.fuzz->seed, 7u);
  ASSERT_TRUE(r.invariants);
  EXPECT_EQ(r.invariants->violations.size(), 1u);
  // A file written before these fields existed still reads.
  nlohmann::json old = to_json(sample());
  old.erase("fuzz");
  old.erase("invariants");
  const Baseline o = baseline_from_json(old, "old");
  EXPECT_FALSE(o.fuzz);
  EXPECT_FALSE(o.invariants);
}

TEST(LintBaseline, FuzzAndInvariantsRegressFromPassToFail) {
  Baseline base = sample(), cur = sample();
  base.fuzz = Baseline::Fuzz{true, 20, 1, 0, ""};
  cur.fuzz = Baseline::Fuzz{false, 20, 1, 3, "Fuzz: FAIL (...)"};
  base.invariants = Baseline::Invariants{true, "no_nan", {}};
  cur.invariants = Baseline::Invariants{true, "no_nan", {}};
  DiffReport d = diff(base, cur);
  EXPECT_TRUE(d.regression());
  auto row = [&](const char* metric) {
    for (const DiffRow& r : d.rows)
      if (r.metric == metric) return r;
    ADD_FAILURE() << metric;
    return DiffRow{};
  };
  EXPECT_EQ(row("fuzz").change, Change::Worse);
  EXPECT_EQ(row("fuzz").baseline, "PASS (20 trials, seed 1)");
  EXPECT_EQ(row("fuzz").current, "FAIL (3 of 20 trials, seed 1)");
  EXPECT_EQ(row("invariants").change, Change::Same);
  EXPECT_EQ(row("invariants").current, "PASS (no_nan)");
  const std::string text = to_text(d, base, cur);
  EXPECT_NE(text.find("fuzz"), std::string::npos) << text;
  // Measured on one side only: shown, not judged.
  cur.fuzz.reset();
  cur.invariants = Baseline::Invariants{false, "no_nan", {"x"}};
  base.invariants.reset();
  d = diff(base, cur);
  EXPECT_FALSE(d.regression());
  EXPECT_EQ(row("fuzz").change, Change::Info);
  EXPECT_EQ(row("fuzz").delta, "not measured now");
  EXPECT_EQ(row("invariants").delta, "not in the baseline");
  EXPECT_EQ(row("invariants").current, "FAIL (1 violation(s))");
}

}  // namespace
}  // namespace kerncap::lint

