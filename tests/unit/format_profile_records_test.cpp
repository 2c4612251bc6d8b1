// The record file: what the in-process writer produces is what the reader gets back,
// including across fork(), with damaged tails, and with files of other versions.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "common/error.hpp"
#include "format/profile_records.hpp"

using namespace kerncap::format;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kerncap-profile-test-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

ProcessInfo info(int64_t pid) {
  ProcessInfo i;
  i.pid = pid;
  i.ppid = 1;
  i.exe = "/bin/app";
  i.cmdline = {"app", "--flag", "with \"quotes\"\n"};
  return i;
}

KernelRecord kernel(uint64_t start, uint64_t end, uint32_t corr) {
  KernelRecord k;
  k.start_ns = start;
  k.end_ns = end;
  k.grid = {4, 2, 1};
  k.block = {128, 1, 1};
  k.registers = 32;
  k.static_shared = 1024;
  k.dynamic_shared = 4096;
  k.stream = 7;
  k.device = 1;
  k.context = 3;
  k.correlation = corr;
  return k;
}

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST(ProfileRecords, RoundTrip) {
  TempDir d;
  RecordWriter w;
  ASSERT_TRUE(w.open(d.path, info(4242)));
  w.device({1, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85ull << 30});
  w.kernel("_Z6squarePfi", kernel(100, 250, 1));
  KernelRecord g = kernel(300, 400, 2);
  g.graph_id = 5;
  g.graph_node = 0x1234567890ull;
  g.cluster = {2, 1, 1};
  w.kernel("triton_poi_fused_add_0", g);
  w.kernel("_Z6squarePfi", kernel(500, 510, 3));
  MemRecord m;
  m.copy_kind = "HtoD";
  m.bytes = 64;
  m.start_ns = 10;
  m.end_ns = 20;
  w.memop(m);
  w.add_dropped(3);
  w.finish("exit");
  EXPECT_TRUE(w.finished());
  w.kernel("late", kernel(1, 2, 9));  // after finish: not written

  auto all = read_records(d.path);
  ASSERT_EQ(all.size(), 1u);
  const ProcessRecords& p = all[0];
  EXPECT_EQ(p.file.filename(), "profile-4242.jsonl");
  EXPECT_EQ(p.info.pid, 4242);
  EXPECT_EQ(p.info.cmdline, info(1).cmdline);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p.devices[0].cc_major, 9);
  EXPECT_EQ(p.names, (std::vector<std::string>{"_Z6squarePfi", "triton_poi_fused_add_0"}));
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.kernels[0].name_id, 0u);
  EXPECT_EQ(p.kernels[1].name_id, 1u);
  EXPECT_EQ(p.kernels[2].name_id, 0u);
  EXPECT_EQ(p.kernels[0].start_ns, 100u);
  EXPECT_EQ(p.kernels[0].end_ns, 250u);
  EXPECT_EQ(p.kernels[0].grid, (std::array<int32_t, 3>{4, 2, 1}));
  EXPECT_EQ(p.kernels[0].block, (std::array<int32_t, 3>{128, 1, 1}));
  EXPECT_EQ(p.kernels[0].registers, 32u);
  EXPECT_EQ(p.kernels[0].static_shared, 1024);
  EXPECT_EQ(p.kernels[0].dynamic_shared, 4096);
  EXPECT_EQ(p.kernels[0].stream, 7u);
  EXPECT_EQ(p.kernels[0].device, 1u);
  EXPECT_EQ(p.kernels[0].context, 3u);
  EXPECT_EQ(p.kernels[0].correlation, 1u);
  EXPECT_EQ(p.kernels[1].graph_id, 5u);
  EXPECT_EQ(p.kernels[1].graph_node, 0x1234567890ull);
  EXPECT_EQ(p.kernels[0].graph_node, 0u);
  EXPECT_EQ(p.kernels[1].cluster, (std::array<uint32_t, 3>{2, 1, 1}));
  ASSERT_EQ(p.memops.size(), 1u);
  EXPECT_EQ(p.memops[0].copy_kind, "HtoD");
  EXPECT_EQ(p.memops[0].bytes, 64u);
  EXPECT_TRUE(p.complete);
  EXPECT_EQ(p.end_reason, "exit");
  EXPECT_EQ(p.dropped, 3u);  // as reported before finish
}

TEST(ProfileRecords, NeverOverwritesAnotherProcessFile) {
  TempDir d;
  RecordWriter a, b;
  ASSERT_TRUE(a.open(d.path, info(77)));
  ASSERT_TRUE(b.open(d.path, info(77)));  // pid reused: a second file
  a.finish("exit");
  b.finish("exit");
  EXPECT_TRUE(fs::exists(d.path / "profile-77.jsonl"));
  EXPECT_TRUE(fs::exists(d.path / "profile-77-1.jsonl"));
  EXPECT_EQ(read_records(d.path).size(), 2u);
}

TEST(ProfileRecords, ProcessThatLaunchedNothingStillReports) {
  TempDir d;
  RecordWriter w;
  ASSERT_TRUE(w.open(d.path, info(5)));
  w.finish("exit");
  auto all = read_records(d.path);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].complete);
  EXPECT_TRUE(all[0].kernels.empty());
  EXPECT_EQ(all[0].info.pid, 5);
}

TEST(ProfileRecords, ErrorMarkerIsOnDiskImmediately) {
  TempDir d;
  RecordWriter w;
  ASSERT_TRUE(w.open(d.path, info(6)));
  w.error("multiple_subscribers", "another CUPTI client is active");
  // No finish(): the process may die; the error must already be readable.
  auto p = read_record_file(d.path / "profile-6.jsonl");
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].code, "multiple_subscribers");
  EXPECT_FALSE(p.complete);
}

TEST(ProfileRecords, ForkChildWritesItsOwnFileAndDropsParentBytes) {
  TempDir d;
  RecordWriter w;
  ASSERT_TRUE(w.open(d.path, info(getpid())));
  w.kernel("_Z6parentv", kernel(1, 2, 1));  // buffered, not yet on disk
  w.lock_for_fork();
  pid_t child = fork();
  if (child == 0) {
    w.reset_in_child();
    w.finish("exit");
    _exit(0);
  }
  w.unlock_in_parent();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  w.kernel("_Z6parentv", kernel(3, 4, 2));
  w.finish("exit");

  ProcessRecords parent = read_record_file(d.path / fmt::format("profile-{}.jsonl", getpid()));
  ProcessRecords kid = read_record_file(d.path / fmt::format("profile-{}.jsonl", child));
  EXPECT_EQ(parent.kernels.size(), 2u);  // the child did not write the parent's buffer again
  EXPECT_EQ(parent.names.size(), 1u);
  EXPECT_TRUE(kid.kernels.empty());
  EXPECT_EQ(kid.info.pid, child);
  EXPECT_EQ(kid.info.forked_from, getpid());
  EXPECT_TRUE(kid.complete);
}

TEST(ProfileRecords, CutOffTailIsToleratedButCorruptionInsideIsNot) {
  TempDir d;
  const std::string header =
      R"({"t":"header","format":"kerncap-profile-records","version":1,"pid":9,"ppid":1,"forked_from":0,"exe":"x","cmdline":[]})"
      "\n";
  const std::string name = R"({"t":"name","id":0,"s":"k"})" "\n";
  const std::string k = R"({"t":"k","n":0,"s":1,"e":2,"g":[1,1,1],"b":[1,1,1],"r":1,"ss":0,"ds":0,"st":0,"d":0,"c":0,"corr":1})" "\n";
  write_file(d.path / "profile-9.jsonl", header + name + k + R"({"t":"k","n":0,"s)");
  auto p = read_record_file(d.path / "profile-9.jsonl");
  EXPECT_EQ(p.kernels.size(), 1u);
  EXPECT_FALSE(p.complete);

  write_file(d.path / "profile-9.jsonl", header + name + "{garbage\n" + k);
  EXPECT_THROW(read_record_file(d.path / "profile-9.jsonl"), kerncap::Error);
}

TEST(ProfileRecords, VersionAndFormatAreChecked) {
  TempDir d;
  write_file(d.path / "profile-1.jsonl",
             R"({"t":"header","format":"kerncap-profile-records","version":99,"pid":1})" "\n");
  try {
    read_records(d.path);
    FAIL() << "a newer version must be refused";
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("newer kerncap"), std::string::npos) << e.what();
  }
  write_file(d.path / "profile-1.jsonl", R"({"t":"header","format":"something-else","version":1})" "\n");
  EXPECT_THROW(read_records(d.path), kerncap::Error);
  write_file(d.path / "profile-1.jsonl", "");
  EXPECT_THROW(read_records(d.path), kerncap::Error);
  EXPECT_THROW(read_records(d.path / "missing"), kerncap::Error);
}

// A record file that is a symbolic link (to another file, outside or not) is refused, never
// followed; a directory or FIFO of that name is no record file and is passed over.
TEST(ProfileRecords, LinksAmongRecordFilesAreRefused) {
  TempDir d, elsewhere;
  const std::string good = R"({"t":"header","format":"kerncap-profile-records","version":1,"pid":3})" "\n";
  write_file(d.path / "profile-3.jsonl", good);
  write_file(elsewhere.path / "profile-4.jsonl", good);
  ASSERT_EQ(read_records(d.path).size(), 1u);
  std::filesystem::create_directory(d.path / "profile-5.jsonl");
  ASSERT_EQ(::mkfifo((d.path / "profile-6.jsonl").c_str(), 0600), 0);
  EXPECT_EQ(read_records(d.path).size(), 1u);
  std::filesystem::create_symlink(elsewhere.path / "profile-4.jsonl", d.path / "profile-4.jsonl");
  try {
    read_records(d.path);
    FAIL() << "a link among the record files must be refused";
  } catch (const kerncap::Error& e) {
    EXPECT_EQ(e.kind(), kerncap::ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  std::filesystem::remove(d.path / "profile-4.jsonl");
  std::filesystem::create_symlink("/dev/zero", d.path / "profile-7.jsonl");
  EXPECT_THROW(read_records(d.path), kerncap::Error);
}

TEST(ProfileRecords, OpenFailsQuietlyInAMissingDirectory) {
  RecordWriter w;
  EXPECT_FALSE(w.open("/nonexistent/kerncap/dir", info(1)));
  w.kernel("k", kernel(1, 2, 3));  // no crash, no throw
  w.finish("exit");
  EXPECT_EQ(w.kernels(), 0u);
}

TEST(ProfileRecords, ParameterSignaturesJoinTheirKernelsByCorrelation) {
  TempDir d;
  RecordWriter w;
  ASSERT_TRUE(w.open(d.path, info(5)));
  const std::vector<ScalarWord> big = {{2, 0, 4, 4096}, {3, 0, 4, 0x3f000000}};
  const std::vector<ScalarWord> small = {{2, 0, 4, 64}, {3, 0, 4, 0x3f000000}};
  // Signatures are written at launch, before CUPTI delivers the kernels (in any order).
  w.params("_Z4normPfi", 11, big);
  w.params("_Z4normPfi", 12, small);
  w.params("_Z4normPfi", 13, big);
  w.params("_Z4normPfi", 99, small);  // a launch into a capturing stream: no kernel of its own
  w.kernel("_Z4normPfi", kernel(300, 400, 13));
  w.kernel("_Z4normPfi", kernel(100, 200, 11));
  w.kernel("_Z4normPfi", kernel(200, 300, 12));
  w.kernel("_Z5otherv", kernel(400, 500, 14));
  KernelRecord graph = kernel(500, 600, 12);  // a graph's kernel carries its graph launch's id
  graph.graph_id = 3;
  w.kernel("_Z4normPfi", graph);
  w.finish("exit");
  const ProcessRecords p = read_record_file(d.path / "profile-5.jsonl");
  ASSERT_EQ(p.signatures.size(), 2u);  // deduplicated
  EXPECT_EQ(p.signatures[0], big);
  EXPECT_EQ(p.signatures[1], small);
  ASSERT_EQ(p.kernels.size(), 5u);
  EXPECT_EQ(p.kernels[0].signature, 0);  // correlation 13
  EXPECT_EQ(p.kernels[1].signature, 0);  // 11
  EXPECT_EQ(p.kernels[2].signature, 1);  // 12
  EXPECT_EQ(p.kernels[3].signature, -1);  // another kernel
  EXPECT_EQ(p.kernels[4].signature, -1);  // a graph node
}

TEST(ProfileRecords, DamagedParameterSignaturesAreRefused) {
  TempDir d;
  const std::string header =
      R"({"t":"header","format":"kerncap-profile-records","version":1,"pid":1})" "\n"
      R"({"t":"name","id":0,"s":"k"})" "\n";
  const std::string end = R"({"t":"end","reason":"exit"})" "\n";
  for (const std::string bad : {R"({"t":"p","n":0,"c":1,"w":[[0,0,9,1]]})",         // 9-byte word
                                R"({"t":"p","n":0,"c":1,"w":[[0,0,4,4294967296]]})",  // value wider than 4 bytes
                                R"({"t":"p","n":5,"c":1,"w":[]})",                     // unknown name
                                R"({"t":"p","n":0,"c":1,"w":[[1,0,4,1],[0,0,4,1]]})",  // out of buffer order
                                R"({"t":"p","n":0,"c":1,"w":[[0,0,-4,1]]})",           // negative
                                R"({"t":"p","n":0,"c":1})"}) {                         // no words
    write_file(d.path / "profile-1.jsonl", header + bad + "\n" + end);
    EXPECT_THROW(read_record_file(d.path / "profile-1.jsonl"), kerncap::Error) << bad;
  }
  write_file(d.path / "profile-1.jsonl", header + R"({"t":"p","n":0,"c":1,"w":[[0,0,8,18446744073709551615]]})" "\n" + end);
  EXPECT_EQ(read_record_file(d.path / "profile-1.jsonl").signatures.at(0).at(0).value, UINT64_MAX);
}
