// `kerncap window extract --window FROM[@N]..TO[@M]`: the spec's parsing (no application run).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "extract/window_run.hpp"

using namespace kerncap::extract;

TEST(ExtractWindow, ParsesFromAndToWithTheirCounts) {
  Request r;
  WindowEndSpec e = parse_window_spec("rms_norm@2..silu_mul@1", &r);
  EXPECT_EQ(r.kernel, "rms_norm");
  EXPECT_EQ(r.dispatch, 2u);
  EXPECT_EQ(e.kernel, "silu_mul");
  EXPECT_EQ(e.dispatch, 1u);
  e = parse_window_spec("gemm..gemm", &r);  // counts default to 0: a window of one launch
  EXPECT_EQ(r.kernel, "gemm");
  EXPECT_EQ(r.dispatch, 0u);
  EXPECT_EQ(e.kernel, "gemm");
  EXPECT_EQ(e.dispatch, 0u);
  // A regex with '|' and an '@' that is no count stay in the pattern.
  e = parse_window_spec("flash_fwd|fmha@3..a@b", &r);
  EXPECT_EQ(r.kernel, "flash_fwd|fmha");
  EXPECT_EQ(r.dispatch, 3u);
  EXPECT_EQ(e.kernel, "a@b");
  EXPECT_EQ(e.dispatch, 0u);
}

TEST(ExtractWindow, RefusesMalformedSpecs) {
  Request r;
  for (const char* bad : {"rms_norm", "..silu", "rms_norm..", "@2..silu", "a..@1", "a@99999999999999999999..b"}) {
    try {
      parse_window_spec(bad, &r);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const kerncap::Error& e) {
      EXPECT_EQ(e.kind(), kerncap::ErrorKind::Usage) << bad;
    }
  }
}

// `--graph [PATTERN@]N`: a window of one CUDA graph launch.
TEST(ExtractWindow, ParsesGraphSpecs) {
  WindowEndSpec g = parse_graph_spec("3", false);
  EXPECT_TRUE(g.graph);
  EXPECT_EQ(g.graph_launch, 3u);
  EXPECT_EQ(g.graph_kernel, "");
  g = parse_graph_spec("exp_kernel@2", false);
  EXPECT_EQ(g.graph_kernel, "exp_kernel");
  EXPECT_EQ(g.graph_launch, 2u);
  g = parse_graph_spec("exp_kernel", false);
  EXPECT_EQ(g.graph_kernel, "exp_kernel");
  EXPECT_EQ(g.graph_launch, 0u);
  for (const char* bad : {"", "@2", "99999999999999999999"}) {
    try {
      parse_graph_spec(bad, false);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const kerncap::Error& e) {
      EXPECT_EQ(e.kind(), kerncap::ErrorKind::Usage) << bad;
    }
  }
  EXPECT_THROW(parse_graph_spec("exp(@1", true), kerncap::Error);  // not a regex
}
