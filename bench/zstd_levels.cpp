// Which zstd level the capture's chunk store uses: compression and decompression speed (one
// thread, MB/s of input) and ratio per level on 4 MiB chunks of data like what captures
// hold (zeros are skipped before compression, so none here): uniform random floats, model
// weights (normal, std 0.02) as bf16 and as fp32, and small integers (token ids, indices).
//   build/bench/zstd_levels [MiB per kind, default 64]
#include <zstd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr size_t kChunk = size_t{4} << 20;

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);  // round to nearest even
}

std::vector<uint8_t> make(const std::string& kind, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  std::mt19937_64 rng(42);
  if (kind == "random_f32") {
    std::uniform_real_distribution<float> d(0.f, 1.f);
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float f = d(rng);
      std::memcpy(&out[i], &f, 4);
    }
  } else if (kind == "weights_bf16") {
    std::normal_distribution<float> d(0.f, 0.02f);
    for (size_t i = 0; i + 2 <= bytes; i += 2) {
      uint16_t h = to_bf16(d(rng));
      std::memcpy(&out[i], &h, 2);
    }
  } else if (kind == "weights_f32") {
    std::normal_distribution<float> d(0.f, 0.02f);
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float f = d(rng);
      std::memcpy(&out[i], &f, 4);
    }
  } else {  // int64 indices below 50k
    std::uniform_int_distribution<int64_t> d(0, 50000);
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
      int64_t v = d(rng);
      std::memcpy(&out[i], &v, 8);
    }
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
  const size_t bytes = mib << 20;
  std::printf("| data | level | compress MB/s | decompress MB/s | ratio |\n|---|---|---|---|---|\n");
  for (const char* kind : {"random_f32", "weights_bf16", "weights_f32", "indices_i64"}) {
    const std::vector<uint8_t> data = make(kind, bytes);
    std::vector<uint8_t> z(ZSTD_compressBound(kChunk)), back(kChunk);
    ZSTD_CCtx* cc = ZSTD_createCCtx();
    ZSTD_DCtx* dc = ZSTD_createDCtx();
    for (int level : {-5, -1, 1, 2, 3, 6}) {
      ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
      size_t zbytes = 0;
      double ct = 0, dt = 0;
      for (size_t off = 0; off < bytes; off += kChunk) {
        auto t = std::chrono::steady_clock::now();
        const size_t n = ZSTD_compress2(cc, z.data(), z.size(), data.data() + off, kChunk);
        ct += seconds_since(t);
        if (ZSTD_isError(n)) return 1;
        zbytes += std::min(n, kChunk);  // incompressible chunks are stored raw
        t = std::chrono::steady_clock::now();
        const size_t m = ZSTD_decompressDCtx(dc, back.data(), back.size(), z.data(), n);
        dt += seconds_since(t);
        if (m != kChunk) return 1;
      }
      std::printf("| %s | %d | %.0f | %.0f | %.3f |\n", kind, level, bytes / ct / 1e6, bytes / dt / 1e6,
                  static_cast<double>(bytes) / static_cast<double>(zbytes));
    }
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
  }
  return 0;
}
