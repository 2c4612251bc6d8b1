// What the fuzzer (tests/fuzz, issue 38) found in the readers of files beside captures, each
// kept fixed here: a regime set's directory that is a link out of OUT is refused, not followed;
// a window_liveout.json that is a directory, a FIFO or a link is refused, not read as absent;
// a profile record line with a non-number where a number goes, or one longer than any line
// kerncap writes, is a typed input error (it was an internal error, or seconds and a gigabyte).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "common/error.hpp"
#include "format/profile_records.hpp"
#include "format/regimes_index.hpp"
#include "format/window_liveout.hpp"

using namespace kerncap;
using namespace kerncap::format;
namespace fs = std::filesystem;

namespace {

struct UntrustedDir {
  fs::path path;
  UntrustedDir() {
    std::string tmpl = (fs::temp_directory_path() / "kerncap-untrusted-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~UntrustedDir() { fs::remove_all(path); }
};

ErrorKind untrusted_kind(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "accepted";
  return ErrorKind::Internal;
}

}  // namespace

TEST(FormatUntrustedFiles, ARegimeSetDirectoryIsOneOfOutItself) {
  UntrustedDir d;
  const fs::path out = d.path / "out", elsewhere = d.path / "elsewhere";
  fs::create_directories(out / "00-k");
  fs::create_directories(elsewhere);
  EXPECT_EQ(index_subdir(out, "00-k", "regime"), out / "00-k");
  fs::create_directory_symlink(elsewhere, out / "01-k");  // a copied or crafted set
  EXPECT_EQ(untrusted_kind([&] { index_subdir(out, "01-k", "regime"); }), ErrorKind::Input);
  try {
    index_subdir(out, "01-k", "kernel set");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kernel set"), std::string::npos) << e.what();
  }
  std::ofstream(out / "02-k") << "a file\n";
  EXPECT_EQ(untrusted_kind([&] { index_subdir(out, "02-k", "regime"); }), ErrorKind::Input);
  ASSERT_EQ(::mkfifo((out / "03-k").c_str(), 0600), 0);
  EXPECT_EQ(untrusted_kind([&] { index_subdir(out, "03-k", "regime"); }), ErrorKind::Input);
  EXPECT_EQ(untrusted_kind([&] { index_subdir(out, "04-k", "regime"); }), ErrorKind::Input);  // missing
}

TEST(FormatUntrustedFiles, ALiveOutFileThatIsNotAFileIsRefusedNotIgnored) {
  UntrustedDir d;
  EXPECT_FALSE(read_window_liveout(d.path).has_value());  // absent: nothing has the name
  const fs::path p = d.path / kWindowLiveOutFile;
  fs::create_directories(p);
  EXPECT_EQ(untrusted_kind([&] { read_window_liveout(d.path); }), ErrorKind::Input);
  fs::remove(p);
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);  // must not block either
  EXPECT_EQ(untrusted_kind([&] { read_window_liveout(d.path); }), ErrorKind::Input);
  fs::remove(p);
  fs::create_symlink("/dev/zero", p);
  EXPECT_EQ(untrusted_kind([&] { read_window_liveout(d.path); }), ErrorKind::Input);
  fs::remove(p);
  fs::create_symlink(d.path / "missing", p);  // a dangling link is a link, not an absence
  EXPECT_EQ(untrusted_kind([&] { read_window_liveout(d.path); }), ErrorKind::Input);
}

TEST(FormatUntrustedFiles, RecordLinesWithOtherTypesOrHugeLinesAreInputErrors) {
  UntrustedDir d;
  const std::string header =
      R"({"t":"header","format":"kerncap-profile-records","version":1,"pid":1})" "\n"
      R"({"t":"name","id":0,"s":"k"})" "\n";
  const fs::path file = d.path / "profile-1.jsonl";
  // Arrays whose elements are not numbers, and fractions no integer holds, read as absent
  // (the records are read leniently), never as a type_error or an undefined conversion.
  std::ofstream(file) << header
                      << R"({"t":"k","n":0,"s":1,"e":2,"g":[[1],"x",null],"b":[1e300,-1e300,0.5],"corr":1e300})" "\n"
                      << R"({"t":"device","id":0,"cc":[[9],{"a":0}],"memory":-1e300})" "\n"
                      << R"({"t":"end","reason":"exit","dropped":1e300})" "\n";
  const ProcessRecords p = read_record_file(file);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].grid, (std::array<int32_t, 3>{0, 0, 0}));
  EXPECT_EQ(p.kernels[0].block, (std::array<int32_t, 3>{0, 0, 0}));
  EXPECT_EQ(p.kernels[0].correlation, 0u);
  EXPECT_EQ(p.dropped, 0u);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].cc_major, 0);
  std::ofstream(file) << R"({"t":"header","format":"kerncap-profile-records","version":1e300,"pid":1})" "\n";
  EXPECT_EQ(untrusted_kind([&] { read_record_file(file); }), ErrorKind::Input);  // version 0: invalid

  // A line longer than any libkerncap writes (a sparse file's gigabyte of zeros) is refused
  // after 16 MiB, not held whole.
  {
    std::ofstream(file) << header;
  }
  fs::resize_file(file, fs::file_size(file) + (uint64_t{1} << 30));
  EXPECT_EQ(untrusted_kind([&] { read_record_file(file); }), ErrorKind::Input);
}
