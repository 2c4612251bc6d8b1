#include "replay/fuzz_outputs.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/driver.hpp"
#include "common/error.hpp"
#include "replay/compare_plan.hpp"
#include "replay/uniform_check.hpp"

namespace kerncap::replay {
namespace {

// How a region is recorded: every byte, or the device check's answer per block followed by
// the blocks it could not name (kMixed), in order.
enum : uint8_t { kWhole = 0, kBlocks = 1 };
constexpr uint64_t kBlock = compare::kBlockBytes;
constexpr uint64_t kMinBlocksRegion = 4ull << 20;  // smaller regions are recorded whole

// The recording's blocks: a grid whose step is a multiple of the block (block c at c * kBlock).
CompareGrid region_grid(const Session& s, uint64_t size) {
  return {0, size, std::max(kBlock, s.staging_bytes() / kBlock * kBlock), kBlock};
}

}  // namespace

RecordedOutputs::RecordedOutputs(const std::filesystem::path& file)
    : path_(file), out_(std::make_unique<format::BlobWriter>(file)) {}

void RecordedOutputs::record(Session& s, size_t i) {
  const uint64_t size = s.capture().manifest.regions[i].size;
  auto* buf = static_cast<uint8_t*>(s.staging(0));
  UniformCheck* check = size >= kMinBlocksRegion ? s.uniform_check() : nullptr;
  const uint8_t layout = check ? kBlocks : kWhole;
  out_->write(&layout, 1);
  if (!check) {
    for (uint64_t off = 0; off < size;) {
      const uint64_t n = std::min(s.staging_bytes(), size - off);
      KC_CU(cuMemcpyDtoH(buf, s.address(i) + off, n));
      out_->write(buf, n);
      off += n;
    }
    return;
  }
  const std::vector<uint32_t> answers = check->run(s.address(i), region_grid(s, size), s.stream());
  const uint64_t count = answers.size();
  out_->write(&count, sizeof count);
  out_->write(answers.data(), answers.size() * sizeof(uint32_t));
  // The blocks it could not name, in runs of at most a staging buffer.
  for (uint64_t c = 0; c < answers.size();) {
    if (answers[c] != kMixed) {
      ++c;
      continue;
    }
    const uint64_t b = c * kBlock;
    uint64_t e = b;
    while (c < answers.size() && answers[c] == kMixed && e - b < s.staging_bytes() / kBlock * kBlock) {
      e = std::min(size, e + kBlock);
      ++c;
    }
    KC_CU(cuMemcpyDtoH(buf, s.address(i) + b, e - b));
    out_->write(buf, e - b);
  }
}

void RecordedOutputs::finish() {
  out_->close();
  out_.reset();
  in_ = std::make_unique<format::BlobReader>(path_);
  at_ = 0;
}

std::vector<compare::Result> RecordedOutputs::compare_next(Session& v, size_t i, const std::vector<Piece>& pieces) {
  if (!in_) fail(ErrorKind::Internal, "fuzz outputs compared before their recording ended");
  const uint64_t size = v.capture().manifest.regions[i].size;
  uint8_t layout = 0;
  in_->read_at(at_, &layout, 1);
  if (layout != kWhole && layout != kBlocks)
    fail(ErrorKind::Internal, fmt::format("fuzz outputs: unknown record layout {} at {}", layout, at_));
  const uint64_t head = at_ + 1;
  // Blocks layout: the answers, where each unnamed block lies in the file, what the named hold.
  std::vector<uint32_t> answers;
  std::vector<uint64_t> stored_at;  // per block: its offset among the stored blocks
  uint64_t data = head, stored = size;
  std::vector<UniformRange> uniform;
  if (layout == kBlocks) {
    uint64_t count = 0;
    in_->read_at(head, &count, sizeof count);
    if (count != (size + kBlock - 1) / kBlock)
      fail(ErrorKind::Internal, fmt::format("fuzz outputs: {} blocks recorded for a region of {} bytes", count, size));
    answers.resize(count);
    in_->read_at(head + sizeof count, answers.data(), answers.size() * sizeof(uint32_t));
    data = head + sizeof count + answers.size() * sizeof(uint32_t);
    stored_at.resize(answers.size());
    stored = 0;
    for (uint64_t c = 0; c < answers.size(); ++c) {
      stored_at[c] = stored;
      if (answers[c] == kMixed) stored += std::min(kBlock, size - c * kBlock);
    }
    uniform = uniform_from_answers(answers, size, kBlock);
  }
  at_ = data + stored;
  // The recorded bytes [off, off + n) into out.
  auto expected = [&](uint64_t off, uint64_t n, uint8_t* out) {
    if (layout == kWhole) return in_->read_at(data + off, out, n);
    for (uint64_t at = off; at < off + n;) {
      const uint64_t c = at / kBlock, e = std::min({off + n, (c + 1) * kBlock, size});
      if (answers[c] == kMixed) in_->read_at(data + stored_at[c] + (at - c * kBlock), out + (at - off), e - at);
      else std::memset(out + (at - off), static_cast<int>(answers[c]), e - at);
      at = e;
    }
  };
  auto* exp = static_cast<uint8_t*>(v.staging(0));
  auto* actual = static_cast<uint8_t*>(v.staging(1));
  const uint64_t step = v.staging_bytes() / 64 * 64;  // the windows the comparison always used
  std::vector<compare::Result> results;
  for (const Piece& p : pieces) {
    compare::Comparator cmp(p.dtype, p.tol);
    const CompareGrid g{p.begin, p.end, step, kBlock};
    std::vector<UniformRange> plain;
    for (const UniformRange& u : uniform)
      if (u.end > p.begin && u.begin < p.end && cmp.plain(u.value)) plain.push_back(u);
    std::vector<uint32_t> device;
    if (worth_checking(g, plain))
      if (UniformCheck* check = v.uniform_check()) device = check->run(v.address(i) + p.begin, g, v.stream());
    for (const CompareStep& st : plan_compare(g, plain, device)) {
      if (st.same) {
        cmp.feed_identical(st.size, st.offset - p.begin);
        continue;
      }
      expected(st.offset, st.size, exp);
      KC_CU(cuMemcpyDtoH(actual, v.address(i) + st.offset, st.size));
      cmp.feed(exp, actual, st.size, st.offset - p.begin);
    }
    results.push_back(cmp.result());
  }
  return results;
}

}  // namespace kerncap::replay
