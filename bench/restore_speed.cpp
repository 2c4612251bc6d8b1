// How fast restore brings BEFORE memory back (the capture's chunks, page cache warm):
//   build/bench/restore_speed [--gib N] [--zeros F] [--kind weights|random] [--dir D]
//       a synthetic region of N GiB (default 4), a fraction F of it zeros (default 0.5, not
//       stored), the rest bf16 weights-like (zstd level 1 gets about 1.3x) or random bytes
//       (incompressible: kept raw); decoded into host memory the way restore reads it.
//   build/bench/restore_speed --capture OUT [--store DIR]
//       the same for a real capture's regions.
//   build/bench/restore_speed --gpu OUT [--store DIR] [--repeat K]
//       the full restore of a real capture onto the GPU (replay::Session::restore).
// Prints GB/s (10^9 bytes per second) "effective": region bytes brought back per second,
// zeros and pruned ranges included (they are memsets on the device, skipped on the host),
// and "stored": bytes decoded per second. The first pass warms the page cache, the best of
// the timed passes is printed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/work_pool.hpp"
#include "format/capture_dir.hpp"
#include "format/chunk_store.hpp"
#include "format/region_bytes.hpp"
#include "replay/restore_plan.hpp"
#include "replay/session.hpp"

namespace fs = std::filesystem;
using namespace kerncap;

namespace {

constexpr uint64_t kPiece = uint64_t{64} << 20;
constexpr uint64_t kWindow = format::kChunkWindow;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t xorshift(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// One 4 MiB window of data: bf16 values of weights (random sign and mantissa, exponents
// of numbers around 0.01) or plain random bytes.
void fill_window(uint8_t* out, uint64_t n, uint64_t seed, bool random) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v = xorshift(s);
    if (!random) {
      uint64_t w = 0;
      for (int k = 0; k < 4; ++k) {
        const uint64_t r = (v >> (16 * k)) & 0xFFFF;
        const uint64_t exp = 0x77 + (r >> 13);      // 8 exponents near 2^-8
        const uint64_t h = (r & 0x8000) | exp << 7 | (r & 0x7F);
        w |= h << (16 * k);
      }
      v = w;
    }
    std::memcpy(out + i, &v, 8);
  }
}

struct Synthetic {
  format::Capture capture;
  format::Region region;
  uint64_t file_bytes = 0;
};

Synthetic synthesize(const fs::path& dir, uint64_t bytes, double zeros, bool random) {
  Synthetic s;
  s.capture.dir = dir;
  s.region.size = bytes;
  s.region.stored.emplace();
  format::ChunkWriter w({dir / format::kChunkDir, format::kDefaultZstdLevel, pool::threads(), 0});
  std::vector<size_t> tickets;
  const uint64_t windows = bytes / kWindow;
  // Every 1/(1-zeros)-th window is stored, the rest zeros: as a sparse capture of a process
  // whose tensors and free memory alternate.
  double credit = 0;
  for (uint64_t k = 0; k < windows; ++k) {
    credit += 1.0 - zeros;
    if (credit < 1.0) continue;
    credit -= 1.0;
    std::vector<uint8_t> data(kWindow);
    fill_window(data.data(), kWindow, k, random);
    if (!s.region.stored->empty() && s.region.stored->back().offset + s.region.stored->back().size == k * kWindow)
      s.region.stored->back().size += kWindow;
    else
      s.region.stored->push_back({k * kWindow, kWindow});
    tickets.push_back(w.add(std::move(data)));
  }
  w.finish();
  for (size_t t : tickets) s.region.chunks.push_back(w.ref(t));
  s.file_bytes = w.stats().file_bytes;
  return s;
}

struct Pass {
  double seconds = 0;
  uint64_t region = 0, stored = 0;
};

// Reads the regions as restore does (plan_restore: fills skipped, copy steps gathered into
// one of two 64 MiB buffers in turn and read as one batch).
Pass decode(const format::Capture& c, const std::vector<const format::Region*>& regions, uint8_t* buf[2]) {
  Pass p;
  const double t0 = now_s();
  size_t turn = 0;
  for (const format::Region* r : regions) {
    format::RegionBytes in(c, *r);
    std::vector<format::RegionBytes::Piece> batch;
    uint64_t used = 0;
    auto flush = [&] {
      if (batch.empty()) return;
      in.read_pieces(batch);
      batch.clear();
      used = 0;
      turn ^= 1;
    };
    for (const auto& step : replay::plan_restore(in.segments(), r->base, r->size)) {
      if (step.fill) continue;
      if (used + step.size > kPiece) flush();
      batch.push_back({step.offset, step.size, buf[turn] + used});
      used += (step.size + 63) / 64 * 64;
      p.stored += step.size;
    }
    flush();
    p.region += r->size;
  }
  p.seconds = now_s() - t0;
  return p;
}

void report(const char* what, const Pass& best, uint64_t file_bytes) {
  std::printf("%s: %.2f GiB of regions (%.2f GiB read back, %.2f GiB of chunk files) in %.3f s: "
              "%.2f GB/s effective, %.2f GB/s decoded, %u threads\n",
              what, static_cast<double>(best.region) / (1ull << 30), static_cast<double>(best.stored) / (1ull << 30),
              static_cast<double>(file_bytes) / (1ull << 30), best.seconds,
              static_cast<double>(best.region) / best.seconds / 1e9, static_cast<double>(best.stored) / best.seconds / 1e9,
              pool::threads());
}

int cpu(const format::Capture& c, const std::vector<const format::Region*>& regions, uint64_t file_bytes, int repeat) {
  std::unique_ptr<uint8_t[]> a(new uint8_t[kPiece]), b(new uint8_t[kPiece]);
  std::memset(a.get(), 0, kPiece);  // touched once, as pinned staging buffers are
  std::memset(b.get(), 0, kPiece);
  uint8_t* buf[2] = {a.get(), b.get()};
  decode(c, regions, buf);  // page cache warm, every chunk checked once
  Pass best;
  for (int i = 0; i < repeat; ++i) {
    const Pass p = decode(c, regions, buf);
    if (i == 0 || p.seconds < best.seconds) best = p;
  }
  report("restore_cpu", best, file_bytes);
  return 0;
}

int gpu(const fs::path& out, int repeat) {
  replay::Options o;
  o.capture = out;
  o.progress = false;
  replay::Session s(o);
  s.restore();  // page cache warm
  double best = 0;
  replay::RestoreStats st;
  for (int i = 0; i < repeat; ++i) {
    const double t0 = now_s();
    st = s.restore();
    const double t = now_s() - t0;
    if (i == 0 || t < best) best = t;
  }
  std::printf("restore_gpu: %.2f GiB of regions (%.2f GiB copied, %.2f GiB memset on the device) in %.3f s: "
              "%.2f GB/s effective, %u threads\n",
              static_cast<double>(st.bytes) / (1ull << 30), static_cast<double>(st.copied) / (1ull << 30),
              static_cast<double>(st.filled) / (1ull << 30), best, static_cast<double>(st.bytes) / best / 1e9,
              pool::threads());
  // The last restore's split (the calling thread's time): tells decode, relocation and the
  // copy engine apart when the effective speed is short of the goal.
  std::printf("restore_gpu split: decode %.3f s, relocate %.3f s (%llu words), waiting for copies %.3f s\n", st.read_s,
              st.rewrite_s, static_cast<unsigned long long>(st.rewritten_words), st.wait_s);
  return 0;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: restore_speed [--gib N] [--zeros F] [--kind weights|random] [--dir D] [--repeat K]\n"
               "       restore_speed --capture OUT [--store DIR] [--repeat K]\n"
               "       restore_speed --gpu OUT [--store DIR] [--repeat K]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 4, zeros = 0.5;
  bool random = false;
  int repeat = 3;
  fs::path dir, capture, gpu_capture;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--gib") gib = std::atof(v);
    else if (a == "--zeros") zeros = std::atof(v);
    else if (a == "--kind") random = std::string(v) == "random";
    else if (a == "--dir") dir = v;
    else if (a == "--repeat") repeat = std::max(1, std::atoi(v));
    else if (a == "--capture") capture = v;
    else if (a == "--gpu") gpu_capture = v;
    else if (a == "--store") format::set_default_store(v);
    else usage();
  }
  try {
    if (!gpu_capture.empty()) return gpu(gpu_capture, repeat);
    if (!capture.empty()) {
      const format::Capture c = format::open_capture(capture);
      std::vector<const format::Region*> regions;
      uint64_t files = 0;
      for (const auto& r : c.manifest.regions) {
        regions.push_back(&r);
        for (const auto& ch : r.chunks) files += ch.stored;
      }
      return cpu(c, regions, files, repeat);
    }
    const bool temporary = dir.empty();
    if (temporary) dir = fs::temp_directory_path() / ("kerncap_restore_speed." + std::to_string(::getpid()));
    fs::create_directories(dir);
    const uint64_t bytes = static_cast<uint64_t>(gib * (1ull << 30)) / kWindow * kWindow;
    const double t0 = now_s();
    const Synthetic s = synthesize(dir, bytes, std::clamp(zeros, 0.0, 1.0), random);
    std::printf("synthetic: %.2f GiB region, %s, %.0f%% zeros, %.2f GiB of chunk files, written in %.1f s\n",
                static_cast<double>(bytes) / (1ull << 30), random ? "random bytes" : "bf16 weights", zeros * 100,
                static_cast<double>(s.file_bytes) / (1ull << 30), now_s() - t0);
    const int rc = cpu(s.capture, {&s.region}, s.file_bytes, repeat);
    if (temporary) fs::remove_all(dir);
    return rc;
  } catch (const Error& e) {
    std::fprintf(stderr, "restore_speed: %s\n", e.what());
    return 2;
  }
}
