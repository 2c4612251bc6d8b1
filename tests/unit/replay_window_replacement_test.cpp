// A window's replacement (--replace FROM..TO=launches.json): the file read strictly (every
// field checked, regions must exist, offsets inside them), the spec's range checked against
// the window, and the arguments packed as a kernel declared with those types reads them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "replay/window_replacement.hpp"

using namespace kerncap;
using namespace kerncap::replay;

namespace {

format::Manifest replacement_manifest() {
  format::Manifest m;
  format::Region a;
  a.id = 3;
  a.base = 0x1000;
  a.size = 4096;
  format::Region b = a;
  b.id = 7;
  b.base = 0x9000;
  m.regions = {a, b};
  return m;
}

nlohmann::json replacement_doc() {
  return nlohmann::json::parse(R"({"launches": [{"image": "fused.cubin", "kernel": "fused", "grid": [4, 1, 1],
    "block": [256, 1, 1], "args": [{"region": 3}, {"region": 7, "offset": 16}, {"i32": -2}, {"f32": 0.5},
    {"u64": 9}]}]})");
}

}  // namespace

TEST(ReplayWindowReplacement, ReadsTheLaunchesAndResolvesImagesBesideTheFile) {
  const Replacement r = replacement_from_json(replacement_doc(), 0, 2, "/tmp/x", replacement_manifest());
  ASSERT_EQ(r.launches.size(), 1u);
  const ReplacementLaunch& l = r.launches[0];
  EXPECT_EQ(l.image, std::filesystem::path("/tmp/x/fused.cubin"));
  EXPECT_EQ(l.kernel, "fused");
  EXPECT_EQ(l.grid[0], 4u);
  ASSERT_EQ(l.args.size(), 5u);
  EXPECT_EQ(l.args[1].region, 7u);
  EXPECT_EQ(l.args[1].offset, 16u);
  EXPECT_EQ(l.args[2].kind, ReplacementArg::Kind::I32);
}

TEST(ReplayWindowReplacement, PacksArgumentsWithTheirNaturalAlignment) {
  const Replacement r = replacement_from_json(replacement_doc(), 0, 2, "/tmp", replacement_manifest());
  std::vector<format::ParamSlot> slots;
  const auto bytes = pack_replacement_args(r.launches[0].args,
                                           [](uint32_t id) { return id == 3 ? 0xA000ull : 0xB000ull; }, &slots);
  ASSERT_EQ(slots.size(), 5u);
  EXPECT_EQ(slots[0].offset, 0u);
  EXPECT_EQ(slots[1].offset, 8u);
  EXPECT_EQ(slots[2].offset, 16u);  // i32
  EXPECT_EQ(slots[3].offset, 20u);  // f32 right after it
  EXPECT_EQ(slots[4].offset, 24u);  // u64 aligned to 8
  ASSERT_EQ(bytes.size(), 32u);
  uint64_t p = 0;
  std::memcpy(&p, bytes.data() + 8, 8);
  EXPECT_EQ(p, 0xB000u + 16);
  int32_t i = 0;
  std::memcpy(&i, bytes.data() + 16, 4);
  EXPECT_EQ(i, -2);
  float f = 0;
  std::memcpy(&f, bytes.data() + 20, 4);
  EXPECT_EQ(f, 0.5f);
}

TEST(ReplayWindowReplacement, StrictReader) {
  const auto m = replacement_manifest();
  auto refused = [&](const std::function<void(nlohmann::json&)>& change, const std::string& what) {
    nlohmann::json j = replacement_doc();
    change(j);
    try {
      replacement_from_json(j, 0, 1, "/tmp", m);
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused([](auto& j) { j["launches"] = nlohmann::json::array(); }, "is empty");
  refused([](auto& j) { j["launches"][0]["args"][0]["region"] = 5; }, "does not have");
  refused([](auto& j) { j["launches"][0]["args"][1]["offset"] = 5000; }, "offset");
  refused([](auto& j) { j["launches"][0]["args"][2] = {{"i32", 1}, {"u32", 2}}; }, "must be");
  refused([](auto& j) { j["launches"][0]["args"][2] = {{"i16", 1}}; }, "must be");
  refused([](auto& j) { j["launches"][0]["block"] = {64, 64, 1}; }, "1024 threads");
  refused([](auto& j) { j["launches"][0]["grid"] = {0, 1, 1}; }, "grid");
  refused([](auto& j) { j["launches"][0].erase("kernel"); }, "kernel");
}

TEST(ReplayWindowReplacement, TheSpecNamesARangeOfTheWindowAndAFile) {
  format::Window w;
  w.ops.resize(4);
  const auto m = replacement_manifest();
  const auto dir = std::filesystem::temp_directory_path() / ("kc_repl_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "l.json") << replacement_doc().dump();
  const Replacement r = read_replacement("1..3=" + (dir / "l.json").string(), w, m);
  EXPECT_EQ(r.from, 1u);
  EXPECT_EQ(r.to, 3u);
  EXPECT_EQ(r.launches[0].image, dir / "fused.cubin");
  EXPECT_THROW(read_replacement("2..1=" + (dir / "l.json").string(), w, m), Error);
  EXPECT_THROW(read_replacement("1..4=" + (dir / "l.json").string(), w, m), Error);
  EXPECT_THROW(read_replacement("1-3=" + (dir / "l.json").string(), w, m), Error);
  EXPECT_THROW(read_replacement("1..3", w, m), Error);
  EXPECT_THROW(read_replacement("1..3=" + (dir / "missing.json").string(), w, m), Error);
  std::filesystem::remove_all(dir);
}

// {"op": N}: an operation of the replaced run kept as captured (the GEMM between a SiLU and a
// multiply that a fused kernel replaces), in its place among the new launches.
TEST(ReplayWindowReplacement, KeepsACapturedOperationInsideTheRun) {
  nlohmann::json j = replacement_doc();
  j["launches"].insert(j["launches"].begin(), nlohmann::json{{"op", 2}});
  const Replacement r = replacement_from_json(j, 1, 3, "/tmp", replacement_manifest());
  ASSERT_EQ(r.launches.size(), 2u);
  ASSERT_TRUE(r.launches[0].op.has_value());
  EXPECT_EQ(*r.launches[0].op, 2u);
  EXPECT_FALSE(r.launches[1].op.has_value());
  EXPECT_EQ(r.launches[1].kernel, "fused");

  auto refused = [&](const nlohmann::json& doc, size_t from, size_t to, const std::string& what) {
    try {
      replacement_from_json(doc, from, to, "/tmp", replacement_manifest());
      ADD_FAILURE() << "accepted " << doc.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(j, 3, 5, "op");  // operation 2 lies outside 3..5
  nlohmann::json extra = j;
  extra["launches"][0]["kernel"] = "k";
  refused(extra, 1, 3, "nothing beside it");
  refused(nlohmann::json::parse(R"({"launches": [{"op": 1}, {"op": 2}]})"), 1, 3, "launches nothing new");
}
