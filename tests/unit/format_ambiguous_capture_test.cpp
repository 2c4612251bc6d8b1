// Issue 38's fuzz run found captures the reader accepted although they were ambiguous or led
// outside: bytes after a NUL at the end of manifest.json (ignored by the JSON reader), an
// empty code image whose hash matched, and OUT/capture as a link to a capture elsewhere.
// Each is refused with an input error that says what is wrong.
#include <gtest/gtest.h>

#include <xxhash.h>

#include <fstream>

#include "common/error.hpp"
#include "common/hex.hpp"
#include "format/capture_dir.hpp"
#include "format/strict_json.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

using json = nlohmann::json;

class AmbiguousCaptureTest : public kerncap::testing::SmallCaptureDir {
 protected:
  std::string manifest_text() const {
    std::ifstream in(dir_ / kManifestName, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static std::string refusal(const fs::path& dir) {
    try {
      open_capture(dir);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::Input ? std::string(e.what()) : "NOT AN INPUT ERROR: " + std::string(e.what());
    }
    return "";
  }
};

TEST_F(AmbiguousCaptureTest, TheSmallCaptureOpens) { EXPECT_EQ(refusal(out_), ""); }

// nlohmann's reader takes a NUL for the end of the input: what follows it was never read.
TEST_F(AmbiguousCaptureTest, BytesAfterANulAreRefused) {
  const std::string text = manifest_text();
  for (const std::string& tail : {std::string("\0", 1), std::string("\0{\"format\":\"other\"}", 20),
                                  std::string("\0\0\0garbage", 10)}) {
    SCOPED_TRACE(tail.size());
    put_text(text + tail);
    const std::string why = refusal(out_);
    EXPECT_NE(why.find("NUL byte at offset"), std::string::npos) << why;
  }
  // A NUL inside: the same.
  std::string inside = text;
  inside.insert(inside.size() / 2, 1, '\0');
  put_text(inside);
  EXPECT_NE(refusal(out_).find("NUL byte"), std::string::npos);
}

TEST_F(AmbiguousCaptureTest, NulInAnyBoundedJsonDocumentIsRefused) {
  const JsonDoc doc{"doc", ""};
  EXPECT_NO_THROW(parse_bounded_json("{\"a\":\"\\u0000\"}", doc));  // an escaped NUL is a character
  EXPECT_THROW(parse_bounded_json(std::string_view("{}\0x", 4), doc), Error);
  EXPECT_THROW(parse_bounded_json(std::string_view("\0{}", 3), doc), Error);
}

TEST_F(AmbiguousCaptureTest, EmptyImageWithAMatchingHashIsRefused) {
  json j = json::parse(manifest_text());
  const std::string image = j["image"]["file"];
  fs::remove(dir_ / image);
  write_file(dir_ / image, nullptr, 0);
  j["image"]["xxh64"] = hex_addr(XXH3_64bits(nullptr, 0));  // the hash of no bytes: it "matches"
  put_text(j.dump());
  const std::string why = refusal(out_);
  EXPECT_NE(why.find("code image) is empty"), std::string::npos) << why;
}

// OUT/capture is the name kerncap picks inside OUT: a link there leads to someone else's
// capture. A capture directory the user names itself may be a link.
TEST_F(AmbiguousCaptureTest, CaptureLinkedOutOfOutIsRefused) {
  const fs::path other = out_ / "other";
  fs::create_directories(other);
  fs::rename(dir_, other / kCaptureDirName);
  fs::create_directory_symlink(other / kCaptureDirName, dir_);
  const std::string why = refusal(out_);
  EXPECT_NE(why.find("is a symbolic link"), std::string::npos) << why;
  EXPECT_NE(why.find("does not follow"), std::string::npos) << why;
  EXPECT_EQ(refusal(other), "");  // the real one still opens
  EXPECT_EQ(refusal(dir_), "");   // and the link, named by the user as the capture directory
}

TEST_F(AmbiguousCaptureTest, DanglingCaptureLinkIsRefused) {
  fs::remove_all(dir_);
  fs::create_directory_symlink(out_ / "nowhere", dir_);
  EXPECT_NE(refusal(out_).find("is a symbolic link"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::format
