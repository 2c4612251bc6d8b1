// OUT/compare.json is untrusted input, read like OUT/kerncap.toml (issue 38): only a regular
// file inside OUT, bounded, strict JSON. A link out of OUT, a FIFO, a directory, a huge file,
// a duplicated key or bytes after a NUL are input errors naming the file, at once.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>

#include "common/error.hpp"
#include "format/out_layout.hpp"
#include "replay/compare_spec.hpp"
#include "scratch_capture.hpp"

namespace kerncap::replay {
namespace {

namespace fs = std::filesystem;

class CompareSpecFile : public kerncap::testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    m_.regions = {{0, format::MemKind::Device, 0x1000, 0x100, "mem/0.bin", 0, ""}};
    file_ = out_ / format::out::kCompareSpec;
  }
  // The Error(Input) default_spec throws ("" when it reads a spec), within 2 s.
  std::string refusal() const {
    auto f = std::async(std::launch::async, [this]() -> std::string {
      try {
        (void)default_spec(out_ / "capture", m_);
      } catch (const Error& e) {
        return e.kind() == ErrorKind::Input ? std::string(e.what()) : "NOT AN INPUT ERROR: " + std::string(e.what());
      }
      return "";
    });
    if (f.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
      ADD_FAILURE() << "default_spec still running after 2 s";
      std::ofstream unblock(file_);  // the writer's end of a FIFO
    }
    return f.get();
  }
  format::Manifest m_;
  fs::path file_;
};

TEST_F(CompareSpecFile, AbsentIsTheDefaultAndARegularFileIsRead) {
  EXPECT_EQ(default_spec(out_ / "capture", m_).source, "default");
  std::ofstream(file_) << R"({"dtype": "fp32"})";
  EXPECT_EQ(refusal(), "");
  EXPECT_EQ(default_spec(out_ / "capture", m_).dtype, compare::DType::F32);
}

TEST_F(CompareSpecFile, ALinkOutOfOutIsRefused) {
  std::ofstream(out_ / "elsewhere.json") << R"({"dtype": "fp32"})";
  fs::create_symlink(out_ / "elsewhere.json", file_);
  EXPECT_NE(refusal().find("symbolic link"), std::string::npos);
  fs::remove(file_);
  fs::create_symlink("/dev/zero", file_);
  EXPECT_NE(refusal().find("symbolic link"), std::string::npos);
}

TEST_F(CompareSpecFile, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(file_.c_str(), 0600), 0);
  EXPECT_NE(refusal().find("is a FIFO"), std::string::npos);
}

TEST_F(CompareSpecFile, ADirectoryIsRefusedNotTakenForNoSpec) {
  fs::create_directory(file_);
  EXPECT_NE(refusal().find("is a directory"), std::string::npos);
}

TEST_F(CompareSpecFile, AHugeFileIsRefusedUnread) {
  std::ofstream(file_) << "{}";
  fs::resize_file(file_, (uint64_t{64} << 20) + 1);  // sparse: nothing is written
  EXPECT_NE(refusal().find("more than"), std::string::npos);
}

TEST_F(CompareSpecFile, AmbiguousJsonIsRefused) {
  std::ofstream(file_) << R"({"dtype": "fp32", "dtype": "i8"})";
  EXPECT_NE(refusal().find("appears twice"), std::string::npos);
  fs::remove(file_);
  std::ofstream(file_, std::ios::binary) << std::string("{\"dtype\": \"fp32\"}\0{\"dtype\": \"i8\"}", 34);
  EXPECT_NE(refusal().find("NUL byte"), std::string::npos);
  fs::remove(file_);
  std::ofstream(file_) << std::string(100000, '[') << std::string(100000, ']');
  EXPECT_NE(refusal().find("nested deeper"), std::string::npos);
}

}  // namespace
}  // namespace kerncap::replay
