// Reading a capture directory from disk: complete captures open, damaged ones are refused
// with a message that names the problem.
#include <gtest/gtest.h>

#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <fstream>

#include "scratch_capture.hpp"
#include "common/error.hpp"
#include "format/capture_dir.hpp"

namespace kerncap::format {
namespace {

class CaptureDirTest : public kerncap::testing::ScratchDir {
 protected:

  // A small but complete capture in OUT/capture: params, image, two regions, AFTER runs.
  Manifest write_complete() {
    const fs::path dir = out_ / kCaptureDirName;
    fs::create_directories(dir / "mem");
    fs::create_directories(dir / "image");
    Manifest m;
    m.tool_version = "test";
    m.mangled_name = "_Z6kernelPf";
    m.params_size = 8;
    m.params = {{0, 8}};
    m.image_file = "image/00000000000000ab.cubin";
    m.image_kind = "cubin";
    m.regions = {{0, MemKind::Device, 0x7f0000000000ull, 256, "mem/0.bin", 0, ""},
                 {1, MemKind::Global, 0x7f0000100000ull, 4, "mem/1.bin", 0, "g"}};
    m.after = {{0, 16, 32, 0}, {1, 0, 4, 32}};
    const std::vector<uint8_t> params(8, 0x11), image(100, 0x7f), r0(256, 1), r1(4, 2), after(36, 3);
    m.image_hash = XXH3_64bits(image.data(), image.size());
    write_file(dir / m.params_file, params.data(), params.size());
    write_file(dir / m.image_file, image.data(), image.size());
    write_file(dir / "mem/0.bin", r0.data(), r0.size());
    write_file(dir / "mem/1.bin", r1.data(), r1.size());
    write_file(dir / m.after_file, after.data(), after.size());
    write_json_atomic(dir / kManifestName, to_json(m));
    return m;
  }

  // The message of the Error(Input) that open_capture throws, or "" if it opens.
  std::string refusal(const fs::path& dir) {
    try {
      open_capture(dir);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
      return e.what();
    }
    return "";
  }

};

TEST_F(CaptureDirTest, CompleteCaptureOpens) {
  const Manifest m = write_complete();
  const Capture c = open_capture(out_);
  EXPECT_EQ(c.dir, out_ / kCaptureDirName);
  EXPECT_EQ(c.manifest.mangled_name, m.mangled_name);
  ASSERT_EQ(c.manifest.regions.size(), 2u);
  EXPECT_EQ(c.manifest.regions[1].global, "g");
  EXPECT_EQ(c.path("mem/0.bin"), out_ / kCaptureDirName / "mem/0.bin");
  EXPECT_EQ(read_file(c.path(c.manifest.params_file)), std::vector<uint8_t>(8, 0x11));
  EXPECT_FALSE(fs::exists(out_ / kCaptureDirName / "manifest.json.tmp"));  // the atomic write cleaned up
}

TEST_F(CaptureDirTest, ResolveAcceptsOutAndOutCapture) {
  write_complete();
  EXPECT_EQ(resolve_capture_dir(out_), out_ / kCaptureDirName);
  EXPECT_EQ(resolve_capture_dir(out_ / kCaptureDirName), out_ / kCaptureDirName);
  EXPECT_EQ(open_capture(out_ / kCaptureDirName).dir, out_ / kCaptureDirName);
}

TEST_F(CaptureDirTest, TruncatedRegionRefused) {
  write_complete();
  fs::resize_file(out_ / kCaptureDirName / "mem/0.bin", 100);
  const std::string why = refusal(out_);
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_NE(why.find("mem/0.bin"), std::string::npos) << why;
}

TEST_F(CaptureDirTest, TruncatedAfterRefused) {
  write_complete();
  fs::resize_file(out_ / kCaptureDirName / "after.bin", 35);
  EXPECT_NE(refusal(out_).find("truncated"), std::string::npos);
}

TEST_F(CaptureDirTest, MissingRegionRefused) {
  write_complete();
  fs::remove(out_ / kCaptureDirName / "mem/1.bin");
  const std::string why = refusal(out_);
  EXPECT_NE(why.find("missing mem/1.bin"), std::string::npos) << why;
}

TEST_F(CaptureDirTest, MissingParamsRefused) {
  write_complete();
  fs::remove(out_ / kCaptureDirName / "params.bin");
  EXPECT_NE(refusal(out_).find("missing params.bin"), std::string::npos);
}

TEST_F(CaptureDirTest, MissingImageRefused) {
  const Manifest m = write_complete();
  fs::remove(out_ / kCaptureDirName / m.image_file);
  const std::string why = refusal(out_);
  EXPECT_NE(why.find("missing " + m.image_file), std::string::npos) << why;
}

TEST_F(CaptureDirTest, OnlyPartialCaptureRefused) {
  fs::create_directories(out_ / "capture.partial-123" / "mem");
  const std::string why = refusal(out_);
  EXPECT_NE(why.find("never completed"), std::string::npos) << why;
  EXPECT_NE(why.find("capture.partial-123"), std::string::npos) << why;
}

TEST_F(CaptureDirTest, EmptyAndMissingDirectoriesRefused) {
  EXPECT_NE(refusal(out_).find("not a kerncap capture"), std::string::npos);
  EXPECT_NE(refusal(out_ / "nope").find("no such directory"), std::string::npos);
}

TEST_F(CaptureDirTest, DamagedManifestRefused) {
  write_complete();
  const fs::path p = out_ / kCaptureDirName / kManifestName;
  std::ofstream(p, std::ios::trunc) << "{\"format\": \"kerncap-capture\", ";
  EXPECT_NE(refusal(out_).find("not valid JSON"), std::string::npos);
}

TEST_F(CaptureDirTest, NewerCaptureRefusedOnOpen) {
  write_complete();
  const fs::path p = out_ / kCaptureDirName / kManifestName;
  auto j = nlohmann::json::parse(std::ifstream(p));
  j["format_version"] = kFormatVersion + 1;
  write_json_atomic(p, j);
  EXPECT_NE(refusal(out_).find("newer"), std::string::npos);
}

TEST_F(CaptureDirTest, BlobsRoundTripAndRefuseReadsPastTheEnd) {
  const fs::path p = out_ / "blob.bin";
  {
    BlobWriter w(p);
    const uint8_t a[3] = {1, 2, 3}, b[2] = {4, 5};
    w.write(a, 3);
    w.write(b, 2);
    EXPECT_EQ(w.offset(), 5u);
    w.close();
  }
  BlobReader r(p);
  EXPECT_EQ(r.size(), 5u);
  uint8_t got[2] = {};
  r.read_at(2, got, 2);
  EXPECT_EQ(got[0], 3);
  EXPECT_EQ(got[1], 4);
  try {
    r.read_at(4, got, 2);
    FAIL() << "read past the end accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(BlobReader(out_ / "absent.bin"), Error);
}

}  // namespace
}  // namespace kerncap::format
