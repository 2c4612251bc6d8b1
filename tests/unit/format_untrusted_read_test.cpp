// A capture directory is untrusted input: one regression case per class of damaged or
// crafted capture found by mutating real ones. Each must end in Error(Input) (exit 2) with a
// message naming the problem: no crash, no hang past a second, no file outside the
// directory, never an internal error.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>

#include "common/error.hpp"
#include "format/capture_dir.hpp"
#include "format/strict_json.hpp"
#include "scratch_capture.hpp"

namespace kerncap::format {
namespace {

using json = nlohmann::json;

class UntrustedReadTest : public kerncap::testing::SmallCaptureDir {
 protected:
  // The small capture's manifest as written (each case edits a copy and writes it back).
  json manifest() const { return original_; }

  // The message of the Error(Input) that open_capture throws ("" if it opens), within 1 s:
  // a reader that blocks (a FIFO) is unblocked by opening the FIFO's other end, then fails.
  std::string refusal(const fs::path& fifo = {}) const {
    auto f = std::async(std::launch::async, [dir = out_]() -> std::string {
      try {
        open_capture(dir);
      } catch (const Error& e) {
        return e.kind() == ErrorKind::Input ? std::string(e.what()) : "NOT AN INPUT ERROR: " + std::string(e.what());
      } catch (const std::exception& e) {
        return "UNTYPED EXCEPTION: " + std::string(e.what());
      }
      return "";
    });
    if (f.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
      ADD_FAILURE() << "open_capture still running after 1 s";
      if (!fifo.empty()) ::close(::open(fifo.c_str(), O_WRONLY | O_NONBLOCK));
    }
    return f.get();
  }

  void expect_refused(const json& j, const std::string& fragment) const {
    put(j);
    const std::string why = refusal();
    EXPECT_NE(why.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << why;
    EXPECT_EQ(why.find("NOT AN INPUT"), std::string::npos) << why;
  }

};

// ---- the baseline ------------------------------------------------------------------------

TEST_F(UntrustedReadTest, TheSmallCaptureOpens) { EXPECT_EQ(refusal(), ""); }

// ---- stack exhaustion ----------------------------------------------------------------------

TEST_F(UntrustedReadTest, DeeplyNestedJsonRefusedWithoutRecursion) {
  for (size_t depth : {size_t{10000}, size_t{200000}}) {
    SCOPED_TRACE(depth);
    json j = manifest();
    j["config"] = "@DEEP@";
    std::string text = j.dump();
    text.replace(text.find("\"@DEEP@\""), 8, std::string(depth, '[') + std::string(depth, ']'));
    put_text(text);
    EXPECT_NE(refusal().find("nested deeper than 64"), std::string::npos);
  }
}

// A key given twice in one object was read as its last value (issue 38's fuzz run:
// kernel.demangled, launch.api, regions[i].device, params.slots[i].size ...): refused, since two
// parsers could read two different captures from one file. The same key in two objects is fine.
TEST_F(UntrustedReadTest, DuplicatedKeysAreRefused) {
  std::string text = manifest().dump();
  const size_t at = text.find("\"kernel\":{");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 300);
  text.insert(at + 10, "\"demangled\":\"other(int)\",");
  put_text(text);
  const std::string why = refusal();
  EXPECT_NE(why.find("the key \"demangled\" appears twice"), std::string::npos) << why;
  // Top level too.
  text = manifest().dump();
  text.insert(1, "\"kernel\":{},");
  put_text(text);
  EXPECT_NE(refusal().find("appears twice"), std::string::npos);
}

TEST_F(UntrustedReadTest, NestingWithinTheLimitIsAccepted) {
  json j = manifest();
  json deep = json::object();
  for (int i = 0; i < 50; ++i) deep = json{{"x", deep}};
  j["config"] = deep;
  put(j);
  EXPECT_EQ(refusal(), "");
}

TEST_F(UntrustedReadTest, OversizedManifestRefusedBeforeReading) {
  put_text("{}");
  fs::resize_file(dir_ / kManifestName, kMaxJsonBytes + 1);  // sparse: nothing is written
  EXPECT_NE(refusal().find("more than"), std::string::npos);
}

// ---- names that lead outside ---------------------------------------------------------------

TEST_F(UntrustedReadTest, AbsoluteNameRefused) {
  json j = manifest();
  j["regions"][0]["file"] = "/etc/passwd";
  expect_refused(j, "absolute path");
  j = manifest();
  j["params"]["file"] = "/etc/hostname";
  expect_refused(j, "'params.file'");
}

TEST_F(UntrustedReadTest, DotDotNameRefused) {
  for (const char* name : {"../params.bin", "mem/../../x", "..", ".", "mem/./0.bin"}) {
    SCOPED_TRACE(name);
    json j = manifest();
    j["after"]["file"] = name;
    expect_refused(j, "'..' component");
  }
}

TEST_F(UntrustedReadTest, OtherUnsafeNamesRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string("image/a\0b.cubin", 15), "NUL"},
      {"", "is empty"},
      {"mem\\0.bin", "backslash"},
      {"mem//0.bin", "empty path component"},
      {"mem/0.bin\nrm -rf", "control character"},
      {std::string(600, 'a'), "too long"},
      {"a/b/c/d/e", "nested too deep"},
  };
  for (const auto& [name, fragment] : cases) {
    SCOPED_TRACE(fragment);
    json j = manifest();
    j["image"]["file"] = name;
    expect_refused(j, fragment);
  }
}

TEST_F(UntrustedReadTest, SymlinkedBlobRefused) {
  // An outside file of exactly the right size: following the link would "work".
  const std::vector<uint8_t> outside(256, 9);
  write_file(out_ / "outside.bin", outside.data(), outside.size());
  fs::remove(dir_ / "mem/0.bin");
  fs::create_symlink(out_ / "outside.bin", dir_ / "mem/0.bin");
  EXPECT_NE(refusal().find("symbolic link"), std::string::npos);
}

TEST_F(UntrustedReadTest, SymlinkedDirectoryOnTheWayRefused) {
  fs::rename(dir_ / "mem", out_ / "elsewhere");
  fs::create_directory_symlink(out_ / "elsewhere", dir_ / "mem");
  const std::string why = refusal();
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  EXPECT_NE(why.find("'mem'"), std::string::npos) << why;
}

TEST_F(UntrustedReadTest, SymlinkedManifestRefused) {
  fs::rename(dir_ / kManifestName, out_ / "m.json");
  fs::create_symlink(out_ / "m.json", dir_ / kManifestName);
  EXPECT_NE(refusal().find("symbolic link"), std::string::npos);
}

// ---- files that are not files ------------------------------------------------------------

TEST_F(UntrustedReadTest, DirectoryAsImageRefused) {
  const std::string image = manifest()["image"]["file"];
  fs::remove(dir_ / image);
  fs::create_directory(dir_ / image);
  EXPECT_NE(refusal().find("is a directory, not a regular file"), std::string::npos);
}

TEST_F(UntrustedReadTest, FifoAsManifestRefusedAtOnce) {
  fs::remove(dir_ / kManifestName);
  ASSERT_EQ(::mkfifo((dir_ / kManifestName).c_str(), 0600), 0);
  EXPECT_NE(refusal(dir_ / kManifestName).find("is a FIFO"), std::string::npos);
}

TEST_F(UntrustedReadTest, FifoAsImageRefusedAtOnce) {
  const fs::path image = dir_ / manifest()["image"]["file"].get<std::string>();
  fs::remove(image);
  ASSERT_EQ(::mkfifo(image.c_str(), 0600), 0);
  EXPECT_NE(refusal(image).find("is a FIFO"), std::string::npos);
}

TEST_F(UntrustedReadTest, FifoAsRegionRefusedAtOnce) {
  fs::remove(dir_ / "mem/0.bin");
  ASSERT_EQ(::mkfifo((dir_ / "mem/0.bin").c_str(), 0600), 0);
  EXPECT_NE(refusal(dir_ / "mem/0.bin").find("is a FIFO"), std::string::npos);
}

TEST_F(UntrustedReadTest, UserPathsAreRegularFilesToo) {
  // read_file is for paths the user names (--cubin): links are followed, FIFOs never block.
  auto why = [](const fs::path& p) {
    try {
      read_file(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(why(out_).find("is a directory"), std::string::npos);
  ASSERT_EQ(::mkfifo((out_ / "fifo").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(why(out_ / "fifo").find("is a FIFO"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  fs::create_symlink(dir_ / "params.bin", out_ / "link");
  EXPECT_EQ(read_file(out_ / "link").size(), 8u);
}

// ---- numbers -------------------------------------------------------------------------------

TEST_F(UntrustedReadTest, FormatVersionMustBeTheIntegerOne) {
  json j = manifest();
  j["format_version"] = true;
  expect_refused(j, "'format_version' has the wrong type");
  j["format_version"] = 1.9;
  expect_refused(j, "'format_version' has the wrong type");
  j["format_version"] = 1.0;  // a float, even when whole
  expect_refused(j, "'format_version' has the wrong type");
  j["format_version"] = uint64_t{4294967297};
  expect_refused(j, "format version 4294967297");
  j["format_version"] = -1;
  expect_refused(j, "'format_version' is -1");
}

TEST_F(UntrustedReadTest, NegativeGridRefused) {
  json j = manifest();
  j["launch"]["grid"][0] = -1;
  expect_refused(j, "'launch.grid[0]' is -1; it cannot be negative");
}

TEST_F(UntrustedReadTest, HugeFloatWhereAnIntegerBelongsRefused) {
  json j = manifest();
  j["regions"][0]["size"] = 1e300;
  expect_refused(j, "'regions[0].size' has the wrong type: expected an integer, found a fractional number");
  j = manifest();
  j["params"]["size"] = 8.0;
  expect_refused(j, "'params.size' has the wrong type");
}

TEST_F(UntrustedReadTest, NoSilentTruncationTo32Bits) {
  json j = manifest();
  j["params"]["slots"][0]["size"] = uint64_t{1} << 32 | 8;  // would read as 8
  expect_refused(j, "'params.slots[0].size' is 4294967304, outside");
  j = manifest();
  j["regions"][0]["id"] = uint64_t{1} << 32;
  expect_refused(j, "'regions[0].id'");
}

TEST_F(UntrustedReadTest, WrapAroundAfterRunRefused) {
  json j = manifest();
  // offset + size wraps to 8: "inside" a 256-byte region in 64-bit arithmetic.
  j["after"]["runs"] = json::array({{{"region", 0}, {"offset", UINT64_MAX - 7}, {"size", 16}, {"file_offset", 0}}});
  expect_refused(j, "lies outside it");
}

TEST_F(UntrustedReadTest, WrapAroundAfterFileOffsetRefused) {
  json j = manifest();
  j["after"]["runs"] = json::array({{{"region", 0}, {"offset", 0}, {"size", 16}, {"file_offset", 0}},
                                    {{"region", 0}, {"offset", 32}, {"size", 16}, {"file_offset", UINT64_MAX - 7}}});
  expect_refused(j, "after.runs[1].file_offset is 18446744073709551608, expected 16");
}

TEST_F(UntrustedReadTest, WrongAfterBinSizeRefused) {
  json j = manifest();
  j["after"]["runs"] = json::array({{{"region", 0}, {"offset", 0}, {"size", 16}, {"file_offset", 0}}});
  put(j);
  const std::vector<uint8_t> after(40, 3);
  fs::remove(dir_ / "after.bin");
  write_file(dir_ / "after.bin", after.data(), after.size());
  const std::string why = refusal();
  EXPECT_NE(why.find("after.bin (AFTER memory) has 40 bytes, the manifest says 16"), std::string::npos) << why;
}

TEST_F(UntrustedReadTest, OverlappingAfterRunsRefused) {
  json j = manifest();
  j["after"]["runs"] = json::array({{{"region", 0}, {"offset", 0}, {"size", 16}, {"file_offset", 0}},
                                    {{"region", 0}, {"offset", 8}, {"size", 16}, {"file_offset", 16}}});
  expect_refused(j, "after.runs[0] and after.runs[1] overlap");
}

TEST_F(UntrustedReadTest, DuplicateAndOverlappingRegionsRefused) {
  json j = manifest();
  json second = j["regions"][0];
  second["file"] = "mem/1.bin";
  j["regions"].push_back(second);  // same id
  expect_refused(j, "repeats region id 0");
  second["id"] = 1;
  second["base"] = "0x7f0000000080";  // inside region 0 (256 bytes at 0x7f0000000000)
  j["regions"][1] = second;
  expect_refused(j, "regions 0 (256 bytes at 0x7f0000000000) and 1 (256 bytes at 0x7f0000000080) overlap");
  second["base"] = "0xffffffffffffff80";  // base + size wraps
  j["regions"][1] = second;
  expect_refused(j, "overflows 64 bits");
  j = manifest();
  j["regions"].push_back(j["regions"][0]);
  j["regions"][1]["id"] = 1;
  j["regions"][1]["base"] = "0x7f0000100000";
  expect_refused(j, "names mem/0.bin, a file another field names too");
}

TEST_F(UntrustedReadTest, ZeroOrOversizedGeometryRefused) {
  const std::vector<std::tuple<const char*, uint64_t, std::string>> cases = {
      {"/launch/grid/0", 0, "'launch.grid[0]' is 0, outside 1..2147483647"},
      {"/launch/grid/0", uint64_t{1} << 31, "'launch.grid[0]' is 2147483648, outside"},
      {"/launch/grid/1", 65536, "'launch.grid[1]' is 65536, outside 1..65535"},
      {"/launch/grid/2", 0, "'launch.grid[2]' is 0"},
      {"/launch/block/0", 0, "'launch.block[0]' is 0, outside 1..1024"},
      {"/launch/block/0", 1025, "'launch.block[0]' is 1025"},
      {"/launch/block/2", 65, "'launch.block[2]' is 65, outside 1..64"},
      {"/launch/shared_mem_bytes", uint64_t{1} << 31, "'launch.shared_mem_bytes' is 2147483648, outside"},
  };
  for (const auto& [ptr, value, fragment] : cases) {
    SCOPED_TRACE(fragment);
    json j = manifest();
    j[json::json_pointer(ptr)] = value;
    expect_refused(j, fragment);
  }
  json j = manifest();
  j["launch"]["block"] = {1024, 2, 1};
  expect_refused(j, "launch.block is 1024x2x1 = 2048 threads");
  j = manifest();
  j["launch"]["grid"] = {1, 1};
  expect_refused(j, "'launch.grid' has 2 elements, expected 3");
}

TEST_F(UntrustedReadTest, NullWhereAnArrayBelongsRefused) {
  for (const char* ptr : {"/regions", "/after/runs", "/params/slots", "/launch/grid", "/launch/attributes", "/device/cc"}) {
    SCOPED_TRACE(ptr);
    json j = manifest();
    j[json::json_pointer(ptr)] = nullptr;
    expect_refused(j, "expected an array, found null");
  }
}

TEST_F(UntrustedReadTest, ParamSlotBeyondTheBufferRefused) {
  json j = manifest();
  j["params"]["slots"] = json::array({{{"offset", 4}, {"size", 8}}});
  expect_refused(j, "params.slots[0] (offset 4, size 8) lies outside the 8-byte parameter buffer");
  j["params"]["slots"] = json::array({{{"offset", UINT32_MAX}, {"size", UINT32_MAX}}});  // sum > 32 bits
  expect_refused(j, "lies outside the 8-byte parameter buffer");
}

TEST_F(UntrustedReadTest, WrongJsonTypesAreInputErrors) {
  const std::vector<std::tuple<const char*, json, std::string>> cases = {
      {"/kernel/mangled", 5, "'kernel.mangled' has the wrong type: expected a string, found an integer"},
      {"/kernel", "k", "'kernel' has the wrong type: expected an object, found a string"},
      {"/launch/cooperative", "yes", "'launch.cooperative' has the wrong type"},
      {"/device/ordinal", "0", "'device.ordinal' has the wrong type"},
      {"/process", json::array(), "'process' has the wrong type"},
      {"/config", 3, "'config' has the wrong type"},
      {"/tool_version", json::object(), "'tool_version' has the wrong type"},
      {"/stats/capture_seconds", "fast", "'stats.capture_seconds' has the wrong type"},
      {"/after/chunk_bytes", -4, "'after.chunk_bytes' is -4"},
      {"/regions/0", 7, "'regions[0]' has the wrong type"},
      {"/regions/0/xxh64", 12, "'regions[0].xxh64' has the wrong type"},
      {"/format", 1, "not a kerncap capture manifest"},
      {"/kernel/demangled", nullptr, "'kernel.demangled' has the wrong type: expected a string, found null"},
  };
  for (const auto& [ptr, value, fragment] : cases) {
    SCOPED_TRACE(ptr);
    json j = manifest();
    j[json::json_pointer(ptr)] = value;
    expect_refused(j, fragment);
  }
  expect_refused(json::array(), "not a kerncap capture manifest");
  put_text("\"kerncap-capture\"");
  EXPECT_NE(refusal().find("not a kerncap capture manifest"), std::string::npos);
}

// ---- hashes --------------------------------------------------------------------------------

TEST_F(UntrustedReadTest, ImageHashAlwaysChecked) {
  json j = manifest();
  j["image"]["xxh64"] = "0x1234";
  expect_refused(j, "does not match the hash the capture recorded");
}

TEST_F(UntrustedReadTest, BlobHashesCheckedOnVerify) {
  const std::vector<uint8_t> r0(256, 1);
  json j = manifest();
  j["regions"][0]["xxh64"] = "0x1234";
  put(j);
  const Capture c = open_capture(out_);  // opens: BEFORE hashes cost a full read, asked for by --verify
  try {
    verify_blobs(c);
    ADD_FAILURE() << "verify_blobs accepted a wrong hash";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("mem/0.bin (BEFORE memory of region 0) does not match"), std::string::npos);
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(XXH64(r0.data(), r0.size(), 0)));
  j["regions"][0]["xxh64"] = hex;
  put(j);
  EXPECT_NO_THROW(verify_blobs(open_capture(out_)));
}

TEST_F(UntrustedReadTest, ConfinedReadsAfterOpen) {
  const Capture c = open_capture(out_);
  EXPECT_EQ(c.read("params.bin", "parameter bytes").size(), 8u);
  EXPECT_EQ(c.read_image().size(), 100u);
  fs::remove(dir_ / "params.bin");
  fs::create_symlink("/etc/hostname", dir_ / "params.bin");
  EXPECT_THROW(c.read("params.bin", "parameter bytes"), Error);
  EXPECT_THROW(c.read("../outside", "x"), Error);
}

}  // namespace
}  // namespace kerncap::format
