// The window's reproducer (issue 36, docs/window.md): README.md lists every operation with
// shares that add up, the Makefile's targets run the window commands, and a crafted window
// capture (kernel names, patterns, foreign examples, device, command with shell and Make
// metacharacters) cannot inject a rule, a command or a Markdown table cell. No GPU: the capture
// is synthetic, and the Makefile is run with `make -n` (and `make help`) when make is installed.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "cli_run.hpp"
#include "common/error.hpp"
#include "format/window.hpp"
#include "reproducer/window_reproducer.hpp"
#include "reproducer_fixtures.hpp"

namespace kerncap::reproducer {
namespace {

const char* kKerncapBin = "/opt/kerncap/bin/kerncap";

// Each payload would create a file named PWNED* if make or the shell ran it.
const std::string kWinEvil =
    "_Z4evilPf\n"
    "run:\n"
    "\ttouch PWNED1\n"
    "$(shell touch PWNED2) `touch PWNED3` $$(touch PWNED4); touch PWNED5 | x \\\n"
    "include /etc/passwd\r\n"
    "# \\";

format::WindowOp win_kernel(const std::string& mangled, uint64_t launch, std::optional<uint64_t> ns,
                            uint64_t hash = 0xab) {
  format::WindowOp k;
  k.kind = format::WindowOp::Kind::Kernel;
  k.launch_index = launch;
  k.mangled = mangled;
  k.image_kind = "cubin";
  k.image_hash = hash;
  k.grid = {64, 1, 1};
  k.block = {256, 1, 1};
  k.params = {{0, 8}};
  k.params_size = 8;
  k.in_app_ns = ns;
  return k;
}

// rms_norm, a D2D copy, a memset, gemm, silu: 5 operations, 3 kernels timed 4100 + 369700 + 3700 ns.
format::Window win_sample() {
  format::Window w;
  w.from = "rms_norm";
  w.from_dispatch = 2;
  w.to = "silu";
  w.to_dispatch = 0;
  w.stream = 0x5000;
  w.ops.push_back(win_kernel("_Z8rms_normPfPKfi", 7, 4100));
  format::WindowOp c;
  c.kind = format::WindowOp::Kind::CopyD2D;
  c.dst = 0x7f0000002000ull;
  c.src = 0x7f0000003000ull;
  c.bytes = 4096;
  w.ops.push_back(c);
  format::WindowOp m;
  m.kind = format::WindowOp::Kind::Memset;
  m.dst = 0x7f0000001000ull;
  m.element_size = 4;
  m.width = 256;
  w.ops.push_back(m);
  w.ops.push_back(win_kernel("_Z4gemmPKfS0_Pfi", 8, 369700, 0xcd));
  w.ops.push_back(win_kernel("_Z4siluPfi", 9, 3700));
  w.in_app_window_ns = 484500;
  w.in_app_kernels_ns = 4100 + 369700 + 3700;
  return w;
}

class WindowReproducer : public ::testing::Test {
 protected:
  void SetUp() override { out_ = scratch_.root() / "out"; }
  // A one-launch capture (manifest, memory) plus window.json: what `kerncap window extract` leaves.
  void write_window(const format::Window& w, const std::string& first_demangled = "rms_norm(float*, float const*, int)") {
    testing::write_fake_capture(out_, w.ops[0].mangled, first_demangled);
    format::write_json_atomic(out_ / "capture" / format::kWindowFile, format::to_json(w));
  }
  WindowGenerated generate() { return generate_window_reproducer({out_, kKerncapBin}); }
  static bool have_make() { return std::system("make --version >/dev/null 2>&1") == 0; }
  // `make -n ARGS` in OUT: the commands make would run, one per line.
  std::string dry(const std::string& args) {
    const auto r = test::run_shell("make -s --no-print-directory -C '" + out_.string() + "' -n " + args);
    EXPECT_EQ(r.code, 0) << r.out;
    return r.out;
  }
  bool pwned() const {
    for (const char* f : {"PWNED1", "PWNED2", "PWNED3", "PWNED4", "PWNED5"})
      if (fs::exists(out_ / f)) return true;
    return false;
  }
  testing::Scratch scratch_;
  fs::path out_;
};

// The README's operation rows: "| N | kind | name | shape | ms | share |".
std::vector<std::string> op_rows(const std::string& readme) {
  std::vector<std::string> rows;
  std::istringstream in(readme);
  static const std::regex row(R"(^\| \d+ \| (kernel|copy|memset) \| .*)");
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, row)) rows.push_back(line);
  return rows;
}

// A table row's cells, split at '|' not escaped by a backslash.
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size()) {
      cur += row[i];
      cur += row[++i];
    } else if (row[i] == '|') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += row[i];
    }
  }
  out.push_back(cur);
  // "| a | b |" -> "", " a ", " b ", "": the cells between the outer bars.
  if (out.size() >= 2) out = std::vector<std::string>(out.begin() + 1, out.end() - 1);
  for (auto& c : out) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return out;
}

TEST_F(WindowReproducer, ReadmeListsEveryOperationWithSharesThatAddUp) {
  const format::Window w = win_sample();
  write_window(w);
  const WindowGenerated g = generate();
  EXPECT_EQ(g.makefile, out_ / "Makefile");
  EXPECT_EQ(g.readme, out_ / "README.md");
  const std::string readme = testing::slurp(out_ / "README.md");
  const auto rows = op_rows(readme);
  ASSERT_EQ(rows.size(), w.ops.size()) << readme;
  const char* kinds[] = {"kernel", "copy", "memset", "kernel", "kernel"};
  const char* names[] = {"`rms_norm`", "copy 4096 B 0x7f0000003000 -> 0x7f0000002000",
                         "memset 256 x 4 B of 0x0 at 0x7f0000001000", "`gemm`", "`silu`"};
  double total = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto c = cells(rows[i]);
    ASSERT_EQ(c.size(), 6u) << rows[i];
    EXPECT_EQ(c[0], std::to_string(i));
    EXPECT_EQ(c[1], kinds[i]) << rows[i];
    EXPECT_EQ(c[2], names[i]) << rows[i];
    if (w.ops[i].in_app_ns) {
      EXPECT_EQ(c[4], fmt::format("{:.4f}", *w.ops[i].in_app_ns / 1e6));
      ASSERT_EQ(c[5].back(), '%') << rows[i];
      total += std::stod(c[5]);
    } else {
      EXPECT_EQ(c[4], "-");
      EXPECT_EQ(c[5], "-");
    }
  }
  EXPECT_NEAR(total, 100.0, 0.05 * 3);  // three rounded shares
  EXPECT_EQ(cells(rows[3])[5], "97.9%");  // gemm: 369700 of 377500
  EXPECT_EQ(cells(rows[0])[3], "(64, 1, 1) x (256, 1, 1)");
  EXPECT_EQ(cells(rows[1])[3], "4.0 KiB");
  EXPECT_NE(readme.find("| | | **total** (timed operations) | | 0.3775 | 100.0% |"), std::string::npos) << readme;
  // The window's own time, the kernels' part of it.
  EXPECT_NE(readme.find("window 0.4845 ms"), std::string::npos);
  EXPECT_NE(readme.find("the kernels ran 77.9% of it"), std::string::npos) << readme;
  // The substitution example names the hottest kernel (gemm, op 3) and a region the window changed.
  EXPECT_NE(readme.find("kerncap window validate . --swap 3=variant.cubin --dtype fp32"), std::string::npos) << readme;
  EXPECT_NE(readme.find("make validate SWAP=\"3=variant.cubin\""), std::string::npos);
  EXPECT_NE(readme.find("--live-out 0"), std::string::npos);
  EXPECT_NE(readme.find("`make time`"), std::string::npos);
  // Kernels with their images; every op index named once.
  EXPECT_NE(readme.find("- op 3: `gemm(float const*, float const*, float*, int)`"), std::string::npos) << readme;
  EXPECT_NE(readme.find("`capture/image/00000000000000cd.cubin` (cubin)"), std::string::npos);
  EXPECT_NE(readme.find("`/opt/kerncap/bin/kerncap`"), std::string::npos);
  EXPECT_NE(readme.find("# kerncap window reproducer: `rms_norm@2..silu@0`"), std::string::npos);
  EXPECT_FALSE(std::regex_search(readme, std::regex("@[A-Z_]+@"))) << "an unfilled placeholder";
}

TEST_F(WindowReproducer, SharesWithoutInAppTimes) {
  format::Window w = win_sample();
  for (auto& op : w.ops) op.in_app_ns.reset();
  w.in_app_window_ns.reset();
  w.in_app_kernels_ns.reset();
  write_window(w);
  generate();
  const std::string readme = testing::slurp(out_ / "README.md");
  for (const auto& row : op_rows(readme)) EXPECT_EQ(cells(row)[5], "-") << row;
  EXPECT_NE(readme.find("No in-app times"), std::string::npos);
  EXPECT_EQ(readme.find("**total**"), std::string::npos);
  EXPECT_NE(readme.find("in-app time | window unknown"), std::string::npos);
  // One kernel timed of three: shares of the timed sum, said so.
  w.ops[3].in_app_ns = 1000;
  write_window(w);
  generate();
  const std::string partial = testing::slurp(out_ / "README.md");
  EXPECT_NE(partial.find("Only 1 of the 3 kernel launches"), std::string::npos) << partial;
  EXPECT_EQ(cells(op_rows(partial)[3])[5], "100.0%");
  const WindowShares s = window_shares(w);
  EXPECT_EQ(s.kernels, 3u);
  EXPECT_EQ(s.kernels_timed, 1u);
  EXPECT_EQ(s.timed_ns, 1000u);
}

TEST_F(WindowReproducer, MakefileTargetsRunTheWindowCommands) {
  write_window(win_sample());
  generate();
  const std::string mk = testing::slurp(out_ / "Makefile");
  for (const char* target : {"\nhelp:\n", "\nrun:\n", "\ntime:\n", "\nvalidate:\n", "\ninfo:\n"})
    EXPECT_NE(mk.find(target), std::string::npos) << target;
  EXPECT_NE(mk.find(".PHONY: help run time validate info"), std::string::npos);
  EXPECT_NE(mk.find("#   op   3  kernel    gemm"), std::string::npos) << mk;
  if (!have_make()) GTEST_SKIP() << "make not installed";
  const std::string kc = kKerncapBin;
  EXPECT_EQ(dry("run"), kc + " window replay . --warmup 0 --iterations 1 \n");
  EXPECT_EQ(dry("time ITERATIONS=50"), kc + " window replay . --warmup 3 --iterations 50 \n");
  EXPECT_EQ(dry("validate"), kc + " window validate .  --live-out all --warmup 3 --iterations 20 \n");
  EXPECT_EQ(dry("validate SWAP='3=a.cubin 4=b.cubin' LIVE_OUT=0 VALIDATE_FLAGS='--dtype fp32'"),
            kc + " window validate . --swap 3=a.cubin --swap 4=b.cubin --live-out 0 --warmup 3 --iterations 20 --dtype fp32\n");
  EXPECT_EQ(dry("info"), kc + " window info .\n");
  EXPECT_EQ(dry("run KERNCAP=/x/kerncap"), "/x/kerncap window replay . --warmup 0 --iterations 1 \n");
  // help is the default goal and lists the operations.
  const auto help = test::run_shell("make -s --no-print-directory -C '" + out_.string() + "'");
  EXPECT_EQ(help.code, 0) << help.out;
  EXPECT_NE(help.out.find("kerncap window reproducer: 5 operations (3 kernels), rms_norm@2..silu@0"), std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("op   1  copy_d2d  copy 4096 B"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("make validate"), std::string::npos);
}

TEST_F(WindowReproducer, CraftedNamesCannotInjectIntoMakefileShellOrMarkdown) {
  format::Window w = win_sample();
  w.ops[3].mangled = kWinEvil;
  w.ops[3].uncaptured_globals = {"g\n\ttouch PWNED1", "`touch PWNED3`|x"};
  w.from = "rms$(shell touch PWNED2)`touch PWNED3`;touch PWNED5\nall:";
  w.to = "silu\n\ttouch PWNED1 #";
  w.foreign_ops = 1;
  w.foreign_examples = {"kernel $(touch PWNED4) | on stream\n# x"};
  write_window(w, kWinEvil);
  // The manifest's own strings too: the device and the command.
  {
    auto j = nlohmann::json::parse(testing::slurp(out_ / "capture/manifest.json"));
    j["device"]["name"] = "H100 $(touch PWNED2)\n\ttouch PWNED1 | <b>x</b>";
    j["process"]["command"] = "./app; touch PWNED5\n    `touch PWNED3`";
    format::write_json_atomic(out_ / "capture/manifest.json", j);
  }
  generate();
  const std::string mk = testing::slurp(out_ / "Makefile");
  // Only the template's lines start a rule, a directive or a recipe.
  for (const char* rule : {"\nrun:", "\ntime:", "\nvalidate:", "\ninfo:", "\nhelp:"})
    EXPECT_EQ(mk.find(rule), mk.rfind(rule)) << rule;
  EXPECT_EQ(mk.find("\nall:"), std::string::npos);
  EXPECT_EQ(mk.find("\ninclude"), std::string::npos);
  EXPECT_EQ(mk.find("\n\ttouch"), std::string::npos);
  std::istringstream lines(mk);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') {
      EXPECT_NE(line.back(), '\\') << "a comment continued onto the next line: " << line;
      continue;
    }
    // Every other line is the template's: an assignment, a directive, a rule or a recipe.
    if (line.find("touch") != std::string::npos) {
      // Capture text reaches recipes only inside a single-quoted echo.
      EXPECT_EQ(line.rfind("\t@echo '", 0), 0u) << line;
    }
  }
  const std::string readme = testing::slurp(out_ / "README.md");
  // Every op row keeps its six cells; no capture text starts a line of its own.
  const auto rows = op_rows(readme);
  ASSERT_EQ(rows.size(), 5u) << readme;
  for (const auto& r : rows) EXPECT_EQ(cells(r).size(), 6u) << r;
  std::istringstream rl(readme);
  for (std::string line; std::getline(rl, line);) {
    EXPECT_NE(line.rfind("run:", 0), 0u) << line;
    EXPECT_NE(line.rfind("include", 0), 0u) << line;
    EXPECT_NE(line.rfind("\ttouch", 0), 0u) << line;
    EXPECT_NE(line.rfind("all:", 0), 0u) << line;
  }
  EXPECT_NE(readme.find("**Warning:** 1 operation(s)"), std::string::npos);
  EXPECT_NE(readme.find("    ./app; touch PWNED5\\n    `touch PWNED3`\n"), std::string::npos) << "the command, one line";
  EXPECT_NE(readme.find(R"(| device | H100 $\(touch PWNED2\)\\n\\ttouch PWNED1 \| \<b\>x\</b\> (sm_90) |)"),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find("module globals not in the capture"), std::string::npos);
  if (!have_make()) GTEST_SKIP() << "make not installed";
  const std::string kc = kKerncapBin;
  // The commands are exactly the template's: nothing from the capture in them.
  EXPECT_EQ(dry("run"), kc + " window replay . --warmup 0 --iterations 1 \n");
  EXPECT_EQ(dry("time"), kc + " window replay . --warmup 3 --iterations 20 \n");
  EXPECT_EQ(dry("validate"), kc + " window validate .  --live-out all --warmup 3 --iterations 20 \n");
  EXPECT_EQ(dry("info"), kc + " window info .\n");
  // help runs its echoes for real: the names are printed, not run.
  const auto help = test::run_shell("make -s --no-print-directory -C '" + out_.string() + "' help");
  EXPECT_EQ(help.code, 0) << help.out;
  EXPECT_NE(help.out.find("$(shell touch PWNED2)`touch PWNED3`;touch PWNED5"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("touch PWNED1"), std::string::npos) << help.out;
  for (const char* target : {"-n run", "-n time", "-n validate", "-n info", "help"})
    (void)test::run_shell("cd '" + out_.string() + "' && make -s " + target);
  EXPECT_FALSE(pwned());
}

TEST_F(WindowReproducer, KerncapPathWithMetacharactersIsQuoted) {
  write_window(win_sample());
  generate_window_reproducer({out_, "/opt/my kerncap/$(touch PWNED2)#x/kerncap"});
  if (!have_make()) GTEST_SKIP() << "make not installed";
  EXPECT_EQ(dry("info"), "'/opt/my kerncap/$(touch PWNED2)#x/kerncap' window info .\n");
  EXPECT_FALSE(pwned());
}

TEST_F(WindowReproducer, OneLaunchCaptureIsRefusedAndFilesArePrivate) {
  testing::write_fake_capture(out_, "_Z6kernelPf", "kernel(float*)");
  try {
    generate();
    ADD_FAILURE() << "a one-launch capture got a window reproducer";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("not a window"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out_ / "Makefile"));
  format::write_json_atomic(out_ / "capture" / format::kWindowFile, format::to_json(win_sample()));
  const fs::path victim = scratch_.root() / "victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, out_ / "Makefile");
  fs::create_symlink(victim, out_ / "README.md.tmp");
  const mode_t old = ::umask(0);
  generate();
  ::umask(old);
  EXPECT_EQ(testing::slurp(victim), "precious");
  for (const char* name : {"Makefile", "README.md"}) {
    EXPECT_FALSE(fs::is_symlink(out_ / name)) << name;
    struct stat st{};
    ASSERT_EQ(stat((out_ / name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
}

TEST_F(WindowReproducer, LongWindowReadmeListsAllMakefileAFew) {
  format::Window w = win_sample();
  while (w.ops.size() < 500) w.ops.push_back(win_kernel("_Z4siluPfi", w.ops.size() + 7, 10));
  w.in_app_kernels_ns.reset();
  write_window(w);
  generate();
  const std::string readme = testing::slurp(out_ / "README.md");
  const auto rows = op_rows(readme);
  ASSERT_EQ(rows.size(), 500u);
  EXPECT_EQ(cells(rows[499])[0], "499");
  // Rounded to 0.1 % in the table (497 launches of 10 ns show 0.0%); the shares themselves add up.
  const WindowShares sh = window_shares(w);
  double total = 0;
  for (const auto& x : sh.share) total += x.value_or(0);
  EXPECT_NEAR(total, 1.0, 1e-9);
  EXPECT_EQ(sh.timed_ns, 4100u + 369700u + 3700u + 495u * 10u);
  const std::string mk = testing::slurp(out_ / "Makefile");
  EXPECT_NE(mk.find("#   op 399  kernel"), std::string::npos);
  EXPECT_EQ(mk.find("#   op 400  kernel"), std::string::npos);
  EXPECT_NE(mk.find("#   ... 100 more (README.md)"), std::string::npos);
  EXPECT_NE(mk.find("@echo '  ... 460 more (README.md, make info)'"), std::string::npos) << mk;
}

TEST(WindowReproducerPieces, NamesShapesAndHottest) {
  const format::Window w = win_sample();
  EXPECT_EQ(window_op_name(w.ops[0]), "rms_norm(float*, float const*, int)");
  EXPECT_EQ(window_op_name(w.ops[2]), "memset 256 x 4 B of 0x0 at 0x7f0000001000");
  format::WindowOp k = w.ops[0];
  k.shared_mem_bytes = 1024;
  EXPECT_EQ(window_op_shape(k), "(64, 1, 1) x (256, 1, 1), 1024 B shared");
  format::WindowOp m = w.ops[2];
  m.height = 8;
  m.pitch = 2048;
  EXPECT_EQ(window_op_shape(m), "8 rows of 1024 B, pitch 2048 B");
  EXPECT_EQ(window_hottest_kernel(w), 3u);
  format::Window none = w;
  for (auto& op : none.ops) op.in_app_ns.reset();
  EXPECT_EQ(window_hottest_kernel(none), 0u);
}

// A window of one CUDA graph launch (`--graph`): titled by the graph launch, the README says
// what the window is; the operations may begin with a copy (its first kernel is the capture's).
TEST_F(WindowReproducer, GraphLaunchWindowIsTitledByTheGraph) {
  format::Window w = win_sample();
  w.from = "gemm";
  w.to.clear();
  w.graph = format::WindowGraph{2, 9};
  std::rotate(w.ops.begin(), w.ops.begin() + 1, w.ops.begin() + 3);  // copy, memset, rms_norm, gemm, silu
  testing::write_fake_capture(out_, w.ops[2].mangled, "rms_norm(float*, float const*, int)");
  format::write_json_atomic(out_ / "capture" / format::kWindowFile, format::to_json(w));
  generate();
  const std::string readme = testing::slurp(out_ / "README.md");
  const std::string makefile = testing::slurp(out_ / "Makefile");
  EXPECT_NE(readme.find("graph gemm@2"), std::string::npos);
  EXPECT_NE(readme.find("the CUDA graph launch #2 (from 0) of the graphs holding `gemm`: its 9 nodes'"), std::string::npos)
      << readme;
  EXPECT_EQ(op_rows(readme).size(), 5u);
  EXPECT_EQ(makefile.rfind("# kerncap window reproducer: graph gemm@2\n", 0), 0u) << makefile.substr(0, 80);
  EXPECT_EQ(format::window_title(w), "graph gemm@2");
  w.from.clear();
  EXPECT_EQ(format::window_title(w), "graph@2");
}

// A window of two streams joined by events (window.json version 2): every operation has its row,
// the other stream's named "[stream 1]", the event operations by their kind, six cells each.
TEST_F(WindowReproducer, StreamsAndEventOperationsHaveTheirRows) {
  format::Window w = win_sample();
  w.streams = 2;
  w.events = 2;
  w.stream_handles = {0x5000, 0x6000};
  format::WindowOp rec, wait;
  rec.kind = format::WindowOp::Kind::EventRecord;
  wait.kind = format::WindowOp::Kind::EventWait;
  std::vector<format::WindowOp> ops = {w.ops[0], rec, wait, w.ops[3], rec, wait, w.ops[4]};
  ops[2].stream = ops[3].stream = ops[4].stream = 1;
  ops[4].event = ops[5].event = 1;
  w.ops = ops;
  write_window(w);
  generate();
  const std::string readme = testing::slurp(out_ / "README.md");
  std::vector<std::string> rows;
  std::istringstream in(readme);
  static const std::regex row(R"(^\| \d+ \| (kernel|copy|memset|event_record|event_wait) \| .*)");
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, row)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 7u) << readme;
  for (const auto& r : rows) EXPECT_EQ(cells(r).size(), 6u) << r;
  EXPECT_EQ(cells(rows[1])[1], "event_record");
  EXPECT_EQ(cells(rows[1])[2], "record event 0 [stream 0]");
  EXPECT_EQ(cells(rows[2])[2], "wait on event 0 [stream 1]");
  // The stream is said after the (shortened) name, not inside it.
  EXPECT_EQ(cells(rows[3])[2], "`gemm` [stream 1]");
  EXPECT_EQ(cells(rows[5])[2], "wait on event 1 [stream 0]");
  EXPECT_EQ(cells(rows[6])[2], "`silu`");
  EXPECT_EQ(cells(rows[1])[3], "-");
}

}  // namespace
}  // namespace kerncap::reproducer
