// What a huge region's footprint costs on the host (no GPU): a synthetic region of N GiB of
// which a few MiB are read and written, as a kernel reaching into a big memory pool leaves it
// (bench/... bigpool: 16 MiB of a 32 GiB pool). Times writing footprint.bin, reading it back
// (what every strong validation does), walking the written runs and deriving never_read()
// (what poisoning and comparison plans do), and prints the process's peak resident memory.
//   build/bench/footprint_scale [--gib N] [--mib M] [--dir D]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "format/footprint.hpp"

namespace fs = std::filesystem;
using kerncap::format::Bitmap;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

long peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t gib = 32, mib = 16;
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--gib")) gib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--mib")) mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: footprint_scale [--gib N] [--mib M] [--dir D]\n");
      return 2;
    }
  }
  if (dir.empty()) dir = (fs::temp_directory_path() / ("kerncap-fpscale-" + std::to_string(getpid()))).string();
  fs::create_directories(dir);
  const uint64_t size = gib << 30, touched = mib << 20, at = size / 3 & ~uint64_t{4095};

  auto t0 = std::chrono::steady_clock::now();
  kerncap::format::Footprint f;
  f.kernel = "synthetic";
  kerncap::format::RegionFootprint r;
  r.id = 0;
  r.size = size;
  r.read = Bitmap(4, size);
  r.written = Bitmap(1, size);
  r.rbw = Bitmap(4, size);
  r.written.set_range(at, touched);             // written: the touched bytes
  r.read.set_range(at / 4 + touched / 8, touched / 8);  // read: the second half of them
  f.regions.push_back(std::move(r));
  std::printf("region %llu GiB, %llu MiB written and %llu MiB read\n", static_cast<unsigned long long>(gib),
              static_cast<unsigned long long>(mib), static_cast<unsigned long long>(mib / 2));
  std::printf("  build bitmaps     %7.3f s\n", seconds_since(t0));
  t0 = std::chrono::steady_clock::now();
  kerncap::format::write_footprint(dir, f);
  std::printf("  write footprint   %7.3f s (%llu bytes)\n", seconds_since(t0),
              static_cast<unsigned long long>(fs::file_size(fs::path(dir) / kerncap::format::kFootprintBin)));
  f = {};
  t0 = std::chrono::steady_clock::now();
  const kerncap::format::Footprint back = kerncap::format::read_footprint(dir);
  std::printf("  read footprint    %7.3f s\n", seconds_since(t0));
  t0 = std::chrono::steady_clock::now();
  uint64_t runs = 0, bytes = 0;
  back.regions[0].written.for_each_run([&](uint64_t, uint64_t count) {
    ++runs;
    bytes += count;
  });
  std::printf("  walk written runs %7.3f s (%llu run, %llu bytes)\n", seconds_since(t0),
              static_cast<unsigned long long>(runs), static_cast<unsigned long long>(bytes));
  t0 = std::chrono::steady_clock::now();
  const uint64_t never_read = back.regions[0].never_read().count();
  std::printf("  never_read()      %7.3f s (%llu bytes)\n", seconds_since(t0), static_cast<unsigned long long>(never_read));
  std::printf("  peak resident     %7ld MiB\n", peak_rss_mib());
  fs::remove_all(dir);
  return never_read == touched / 2 ? 0 : 1;
}
