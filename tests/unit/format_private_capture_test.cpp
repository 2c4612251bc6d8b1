// A published capture is private whatever the umask: its directories are 0700, so the
// blobs inside (the application's memory) are readable by their owner only.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "format/capture_writer.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

class PrivateCapture : public kerncap::testing::ScratchDir {};

mode_t mode_of(const fs::path& p) {
  struct stat st{};
  EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 0777;
}

TEST_F(PrivateCapture, DirectoriesArePrivateUnderUmaskZero) {
  const mode_t old = ::umask(0);
  fs::path published;
  {
    CaptureWriter w(out_, 4321);
    Manifest m;
    m.tool_version = "test";
    const std::vector<uint8_t> image(64, 0x7f), params(8, 1);
    w.write_image(m, image.data(), image.size(), 0xabcdef, "cubin");
    w.write_params(m, params.data(), params.size());
    published = w.publish(m);
  }
  ::umask(old);
  for (const char* d : {"", "mem", "image"}) EXPECT_EQ(mode_of(published / d), 0700u) << d;
}

}  // namespace
}  // namespace kerncap::format
