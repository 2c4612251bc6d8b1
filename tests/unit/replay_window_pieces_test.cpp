// The tensors of one allocation for --live-out auto (replay/window_pieces.hpp): a region cut
// where the window's kernels point into it, each piece the changed bytes between two cuts, read
// when the observation after the window reached it; a region decided as a whole when it was
// not read, or its reads are not all listed. The case behind it: a PyTorch segment holding the
// up projection's output u, the SiLU's output t (dead: only the multiply reads it) and more.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "replay/window_pieces.hpp"

using namespace kerncap;
using namespace kerncap::replay;

namespace {

format::LiveOutRegion pieces_observed(std::vector<std::pair<uint64_t, uint64_t>> reads, bool complete = true) {
  format::LiveOutRegion r;
  r.id = 12;
  r.read = true;
  r.evidence = "reached by launch 9 of down_proj";
  r.reads = std::move(reads);
  r.reads_complete = complete;
  return r;
}

}  // namespace

TEST(ReplayWindowPieces, CutsAtTheWindowsPointersAndKeepsTheChangedBytes) {
  // u at 0x1000 and t at 0x2000 (both 0x1000 long, changed as one run with a hole), m at 0x5000.
  const auto p = window_pieces(0x8000, {{0x2400, 0xc00}, {0x1000, 0x1300}, {0x5000, 0x800}}, {0x2000, 0x1000, 0x5000},
                               pieces_observed({{0x5000, 1}}));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].offset, 0x1000u);
  EXPECT_EQ(p[0].size, 0x1000u);
  EXPECT_EQ(p[1].offset, 0x2000u);
  EXPECT_EQ(p[1].size, 0x1000u);  // the hole inside stays in the piece
  EXPECT_EQ(p[2].offset, 0x5000u);
  EXPECT_FALSE(p[0].read);
  EXPECT_FALSE(p[1].read);
  EXPECT_TRUE(p[2].read);
  EXPECT_NE(p[1].evidence.find("not reached"), std::string::npos) << p[1].evidence;
  EXPECT_NE(p[2].evidence.find("0x5000"), std::string::npos) << p[2].evidence;
}

TEST(ReplayWindowPieces, APointerWhereNothingChangedReadsTheNextPiece) {
  // A read at 0x800 (before u, between cuts 0 and 0x1000 where nothing changed) reaches u;
  // a read inside t's span reaches t; a copy's range reaches every piece it overlaps.
  auto p = window_pieces(0x8000, {{0x1000, 0x1000}, {0x2000, 0x1000}, {0x5000, 0x800}}, {0x1000, 0x2000, 0x5000},
                         pieces_observed({{0x800, 1}}));
  EXPECT_TRUE(p[0].read);
  EXPECT_FALSE(p[1].read);
  EXPECT_FALSE(p[2].read);
  p = window_pieces(0x8000, {{0x1000, 0x1000}, {0x2000, 0x1000}, {0x5000, 0x800}}, {0x1000, 0x2000, 0x5000},
                    pieces_observed({{0x2ff0, 1}, {0x4000, 0x1100}}));
  EXPECT_FALSE(p[0].read);
  EXPECT_TRUE(p[1].read);
  EXPECT_TRUE(p[2].read);
}

TEST(ReplayWindowPieces, ARegionIsDecidedWholeWhenUnreadOrItsReadsAreNotAllListed) {
  auto obs = pieces_observed({{0x5000, 1}}, false);
  auto p = window_pieces(0x8000, {{0x1000, 0x1000}, {0x5000, 0x800}}, {0x1000, 0x5000}, obs);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(p[0].read);
  EXPECT_TRUE(p[1].read);
  obs.read = false;
  obs.reads_complete = true;
  obs.reads.clear();
  obs.evidence = "not reached before the application ended";
  p = window_pieces(0x8000, {{0x1000, 0x1000}, {0x5000, 0x800}}, {0x1000, 0x5000}, obs);
  EXPECT_FALSE(p[0].read);
  EXPECT_FALSE(p[1].read);
  EXPECT_EQ(p[0].evidence, obs.evidence);
}

TEST(ReplayWindowPieces, CutsComeFromPointerWordsIntoTheRegion) {
  std::vector<uint8_t> params(32);
  const uint64_t words[] = {256, 0x7000 + 0x1000, 0x7000 + 0x3000, 0x7000 + 0x8000};
  std::memcpy(params.data(), words, sizeof words);
  std::vector<uint64_t> cuts;
  add_pointer_cuts(params, 0x7000, 0x8000, &cuts);
  EXPECT_EQ(cuts, (std::vector<uint64_t>{0x1000, 0x3000}));  // 0x7000 + 0x8000 is past the end
}

// Strong validation's pieces (window_poison.cpp): a segment's changed runs grouped between the
// cuts the window's kernels point to, a run across a cut split there.
TEST(ReplayWindowPieces, RunsSplitAtCutsIntoPiecesForTheProbe) {
  using Runs = std::vector<std::pair<uint64_t, uint64_t>>;
  // Input at 0 (not changed), a at 0x1000, b at 0x2000, out at 0x3000; one run crosses b's cut.
  const auto p = split_runs_at_cuts({{0x3000, 4}, {0x1000, 0x800}, {0x1800, 0x1000}}, {0x3000, 0, 0x2000, 0x1000, 0x2000});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0], (Runs{{0x1000, 0x800}, {0x1800, 0x800}}));
  EXPECT_EQ(p[1], (Runs{{0x2000, 0x800}}));
  EXPECT_EQ(p[2], (Runs{{0x3000, 4}}));
  // No cut inside: one piece; runs before the first cut are a piece of their own.
  EXPECT_EQ(split_runs_at_cuts({{0x10, 8}, {0x40, 8}}, {0}).size(), 1u);
  EXPECT_EQ(split_runs_at_cuts({{0x10, 8}, {0x40, 8}}, {0x20}).size(), 2u);
  EXPECT_TRUE(split_runs_at_cuts({}, {0x20}).empty());
}

TEST(ReplayWindowPieces, WriterCutsSeparateAFreedBlocksTailFromTheSmallerTensorOverIt) {
  // The Llama case: op 3 wrote a 1 MiB float tensor at 0; op 10 then wrote the 512 KiB output over
  // its first half (both at one pointer). Two bytes of the output equal what was there (op 3's).
  const std::vector<WriterStretch> w = {{0, 0x1234, 10}, {0x1234, 2, 3}, {0x1236, 0x80000 - 0x1236, 10}, {0x80000, 0x80000, 3}};
  const auto cuts = writer_cuts(w);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0], 0x80000u);
  // The pieces: the output read after the window, the tail dead.
  const auto p = window_pieces(0x200000, {{0, 0x100000}}, {0, 0x80000}, pieces_observed({{0, 1}}));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(p[0].read);
  EXPECT_FALSE(p[1].read);
  EXPECT_EQ(p[1].offset, 0x80000u);
}

TEST(ReplayWindowPieces, WriterCutsLeaveOutBytesNoOperationChanged) {
  // What the H200 showed: the tail's floats were rewritten with values close to the ones there
  // before (the same norm, one layer earlier), so their high bytes did not change (-1) between
  // the low bytes op 3 changed; and the output had a byte equal to what lay under it. The cut
  // is where the output's bytes end, not after the first long run of op 3's bytes.
  std::vector<WriterStretch> w = {{0, 0x7f00, 10}, {0x7f00, 1, 3}, {0x7f01, 0x80000 - 0x7f01, 10}};
  for (uint64_t f = 0x80000; f < 0x100000; f += 4) {
    w.push_back({f, 2, 3});
    w.push_back({f + 2, 2, (f / 4) % 7 ? -1 : 3});
  }
  const auto cuts = writer_cuts(w);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0], 0x80000u);
  // A tail that begins with bytes nobody changed: the cut still lies where the output ends.
  const std::vector<WriterStretch> v = {{0, 0x80000, 10}, {0x80000, 2, -1}, {0x80002, 0x1000, 3}};
  EXPECT_EQ(writer_cuts(v), std::vector<uint64_t>{0x80000});
  // Nothing but unchanged bytes, or one writer: no cut.
  EXPECT_TRUE(writer_cuts(std::vector<WriterStretch>{{0, 0x100, -1}}).empty());
  EXPECT_TRUE(writer_cuts(std::vector<WriterStretch>{{0, 0x100, 4}, {0x100, 0x10, -1}, {0x110, 0x100, 4}}).empty());
}

TEST(ReplayWindowPieces, WriterCutsFollowTheChangedBytesAcrossGapsAndKeepShortFirstStretches) {
  // One writer on both sides of a gap of unchanged bytes gives no cut, a new writer does; a short
  // first stretch stays its own; a short one later joins its predecessor.
  const std::vector<WriterStretch> w = {{0, 16, 0}, {16, 0x3f0, 1}, {0x800, 0x400, 1}, {0xc00, 8, 5}, {0xc08, 0x3f8, 2}};
  const auto cuts = writer_cuts(w);
  ASSERT_EQ(cuts.size(), 2u);
  EXPECT_EQ(cuts[0], 16u);
  EXPECT_EQ(cuts[1], 0xc08u);
  EXPECT_TRUE(writer_cuts({}).empty());
}

namespace {

// bf16 of a float, rounded to nearest even (as PyTorch's casts), and back.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST(ReplayWindowPieces, LastWritersOfTheLlamaNormsBlockCutWhereTheResultEnds) {
  // The H200 capture, in numbers: region 4 holds (at offset 0) the attention's bf16 output (op 0),
  // then the post-attention norm's float copy of the hidden state, 1 MiB (op 3), then the norm's
  // bf16 result over the front 512 KiB (op 10). Before the window the block held the input norm's
  // result and float copy of the layer's input, one layer earlier: the hidden state then differed
  // by the attention's small output only, so most of the tail's bytes did not change (a float
  // made from a bf16 has zero low bytes; some elements round to the same bf16).
  constexpr size_t rows = 512, hidden = 512, n = rows * hidden;
  std::mt19937 rng(7);
  std::normal_distribution<float> unit(0.0f, 1.0f), small(0.0f, 0.02f);
  std::vector<uint16_t> x0(n), h(n), attn(n);
  for (size_t i = 0; i < n; ++i) {
    x0[i] = to_bf16(unit(rng));
    attn[i] = to_bf16(small(rng));
    h[i] = to_bf16(from_bf16(x0[i]) + from_bf16(attn[i]));
  }
  auto norm = [&](const std::vector<uint16_t>& x) {  // weight near one, as hf_llama.py draws it
    std::vector<uint16_t> out(n);
    for (size_t r = 0; r < rows; ++r) {
      float sq = 0;
      for (size_t c = 0; c < hidden; ++c) sq += from_bf16(x[r * hidden + c]) * from_bf16(x[r * hidden + c]);
      const float rstd = 1.0f / std::sqrt(sq / hidden + 1e-6f);
      for (size_t c = 0; c < hidden; ++c)
        out[r * hidden + c] = to_bf16((1.0f + 0.1f * static_cast<float>(c % 7) / 7) *
                                      from_bf16(to_bf16(from_bf16(x[r * hidden + c]) * rstd)));
    }
    return out;
  };
  std::vector<uint8_t> block(2 * n * 4 / 2);  // 1 MiB: the changed span
  auto put_floats = [&](const std::vector<uint16_t>& x) {
    for (size_t i = 0; i < n; ++i) {
      const float f = from_bf16(x[i]);
      std::memcpy(block.data() + 4 * i, &f, 4);
    }
  };
  auto put_bf16 = [&](const std::vector<uint16_t>& x) { std::memcpy(block.data(), x.data(), 2 * n); };
  put_floats(x0);
  put_bf16(norm(x0));  // before the window: the input norm's float copy under its result
  LastWriters lw(0, block);
  put_bf16(attn);  // op 0: the attention's output
  lw.after(0, block);
  for (int32_t op = 1; op < 3; ++op) lw.after(op, block);  // they write other regions
  put_floats(h);  // op 3: to float
  lw.after(3, block);
  for (int32_t op = 4; op < 10; ++op) lw.after(op, block);
  put_bf16(norm(h));  // op 10: the result
  lw.after(10, block);

  const std::vector<std::pair<uint64_t, uint64_t>> runs = {{0, block.size()}};
  const std::vector<WriterStretch> st = lw.stretches(runs);
  ASSERT_FALSE(st.empty());
  const auto cuts = writer_cuts(st);
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_LE(cuts[0], 2 * n);       // the result's bytes end there ...
  EXPECT_GT(cuts[0], 2 * n - 16);  // ... unless its last bytes equal what lay under them
  // With the gate GEMM's pointer at 0 after the window: the result is read, the tail dead.
  std::vector<uint64_t> all_cuts = {0};
  all_cuts.insert(all_cuts.end(), cuts.begin(), cuts.end());
  const auto p = window_pieces(2 << 20, runs, all_cuts, pieces_observed({{0, 1}}));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(p[0].read);
  EXPECT_FALSE(p[1].read);
  EXPECT_EQ(p[1].offset + p[1].size, block.size());
  // The first version's rule (unchanged bytes a writer of their own, the cut at the next stretch
  // of 256 bytes) would have cut late: the tail's changed bytes come two at a time.
  size_t tail_short = 0;
  for (const auto& x : st)
    if (x.offset >= 2 * n && x.writer == 3 && x.bytes < 256) ++tail_short;
  EXPECT_GT(tail_short, 1000u);
}
