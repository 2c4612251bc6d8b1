// The capture manifest: every field survives a round trip; bad manifests are refused with
// a message that says what is wrong.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "format/manifest.hpp"

namespace kerncap::format {
namespace {

Manifest full_manifest() {
  Manifest m;
  m.tool_version = "9.8.7";
  // "match" (exact, regex, substring) beside "regex": config is kept as written, so a manifest
  // with or without it reads the same.
  m.config = {{"kernel", "gemm.*"}, {"regex", true}, {"match", "regex"}, {"dispatch", 3}, {"closure", "reachable"}};
  m.pid = 4242;
  m.command = "python train.py --steps 1";
  m.device_ordinal = 1;
  m.device_name = "NVIDIA H100 80GB HBM3";
  m.cc_major = 9;
  m.cc_minor = 0;
  m.driver_version = 13000;
  m.mangled_name = "_Z4gemmPKfS0_Pfi";
  m.demangled_name = "gemm(float const*, float const*, float*, int)";
  m.dispatch = 3;
  m.launch_index = (uint64_t{1} << 40) + 5;
  m.launch_api = "cuLaunchKernelEx";
  m.grid = {128, 2, 3};
  m.block = {256, 1, 2};
  m.shared_mem_bytes = 49152;
  m.cooperative = true;
  m.cluster = {2, 1, 1};
  m.launch_attrs = {{4, "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION", {0x02, 0x00, 0xff, 0x10}},
                    {7, "CU_LAUNCH_ATTRIBUTE_PRIORITY", {}}};
  m.func_attrs = {{8, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 98304}, {9, "carveout", -1}};
  m.params_file = "params.bin";
  m.params_size = 28;
  m.params_source = "extra";
  m.params = {{0, 8}, {8, 8}, {16, 8}, {24, 4}};
  m.image_file = "image/0123456789abcdef.cubin";
  m.image_kind = "fatbin";
  m.image_hash = 0xfedcba9876543210ull;  // high bit set: must not pass through a JSON double
  m.regions = {{0, MemKind::Device, 0x7f0000000000ull, 4096, "mem/0.bin", 0x8000000000000001ull, ""},
               {1, MemKind::Managed, 0x7f0000200000ull, 1 << 20, "mem/1.bin", 0x1234, ""},
               {2, MemKind::Global, 0x7f00deadb000ull, 16, "mem/2.bin", 0x99, "counter"},
               {3, MemKind::Vmm, 0x7f0100000000ull, 2 << 20, "mem/3.bin", 0, ""},
               {4, MemKind::HostMapped, 0x200000000ull, 64, "mem/4.bin", 1, ""},
               {5, MemKind::HostRegistered, 0x300000000ull, 64, "mem/5.bin", 2, ""},
               {6, MemKind::Pitch, 0x7f0200000000ull, 512, "mem/6.bin", 3, ""},
               {7, MemKind::Async, 0x7f0300000000ull, 256, "mem/7.bin", 4, ""}};
  m.after_file = "after.bin";
  m.after = {{0, 0, 4096, 0}, {1, 8192, 4096, 4096}, {2, 8, 8, 8192}};
  m.chunk_bytes = 8192;
  m.before_bytes = 3u << 20;
  m.after_bytes = 8200;
  m.capture_seconds = 1.25;
  return m;
}

void expect_same(const Manifest& a, const Manifest& b) {
  EXPECT_EQ(a.format_version, b.format_version);
  EXPECT_EQ(a.tool_version, b.tool_version);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.device_ordinal, b.device_ordinal);
  EXPECT_EQ(a.device_name, b.device_name);
  EXPECT_EQ(a.cc_major, b.cc_major);
  EXPECT_EQ(a.cc_minor, b.cc_minor);
  EXPECT_EQ(a.driver_version, b.driver_version);
  EXPECT_EQ(a.mangled_name, b.mangled_name);
  EXPECT_EQ(a.demangled_name, b.demangled_name);
  EXPECT_EQ(a.dispatch, b.dispatch);
  EXPECT_EQ(a.launch_index, b.launch_index);
  EXPECT_EQ(a.launch_api, b.launch_api);
  EXPECT_EQ(a.grid, b.grid);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(a.shared_mem_bytes, b.shared_mem_bytes);
  EXPECT_EQ(a.cooperative, b.cooperative);
  EXPECT_EQ(a.cluster, b.cluster);
  ASSERT_EQ(a.launch_attrs.size(), b.launch_attrs.size());
  for (size_t i = 0; i < a.launch_attrs.size(); ++i) {
    EXPECT_EQ(a.launch_attrs[i].id, b.launch_attrs[i].id);
    EXPECT_EQ(a.launch_attrs[i].name, b.launch_attrs[i].name);
    EXPECT_EQ(a.launch_attrs[i].raw, b.launch_attrs[i].raw);
  }
  ASSERT_EQ(a.func_attrs.size(), b.func_attrs.size());
  for (size_t i = 0; i < a.func_attrs.size(); ++i) {
    EXPECT_EQ(a.func_attrs[i].id, b.func_attrs[i].id);
    EXPECT_EQ(a.func_attrs[i].name, b.func_attrs[i].name);
    EXPECT_EQ(a.func_attrs[i].value, b.func_attrs[i].value);
  }
  EXPECT_EQ(a.params_file, b.params_file);
  EXPECT_EQ(a.params_size, b.params_size);
  EXPECT_EQ(a.params_source, b.params_source);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].offset, b.params[i].offset);
    EXPECT_EQ(a.params[i].size, b.params[i].size);
  }
  EXPECT_EQ(a.image_file, b.image_file);
  EXPECT_EQ(a.image_kind, b.image_kind);
  EXPECT_EQ(a.image_hash, b.image_hash);
  ASSERT_EQ(a.regions.size(), b.regions.size());
  for (size_t i = 0; i < a.regions.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a.regions[i].id, b.regions[i].id);
    EXPECT_EQ(a.regions[i].kind, b.regions[i].kind);
    EXPECT_EQ(a.regions[i].base, b.regions[i].base);
    EXPECT_EQ(a.regions[i].size, b.regions[i].size);
    EXPECT_EQ(a.regions[i].file, b.regions[i].file);
    EXPECT_EQ(a.regions[i].xxh64, b.regions[i].xxh64);
    EXPECT_EQ(a.regions[i].global, b.regions[i].global);
  }
  EXPECT_EQ(a.after_file, b.after_file);
  ASSERT_EQ(a.after.size(), b.after.size());
  for (size_t i = 0; i < a.after.size(); ++i) {
    EXPECT_EQ(a.after[i].region, b.after[i].region);
    EXPECT_EQ(a.after[i].offset, b.after[i].offset);
    EXPECT_EQ(a.after[i].size, b.after[i].size);
    EXPECT_EQ(a.after[i].file_offset, b.after[i].file_offset);
  }
  EXPECT_EQ(a.chunk_bytes, b.chunk_bytes);
  EXPECT_EQ(a.before_bytes, b.before_bytes);
  EXPECT_EQ(a.after_bytes, b.after_bytes);
  EXPECT_EQ(a.capture_seconds, b.capture_seconds);
}

// The message of the Error(Input) that from_json throws, or "" if it accepts the JSON.
std::string refusal(const nlohmann::json& j) {
  try {
    from_json(j);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  return "";
}

TEST(FormatManifest, RoundTripKeepsEveryField) {
  const Manifest m = full_manifest();
  // Through text, as on disk.
  const Manifest back = from_json(nlohmann::json::parse(to_json(m).dump()));
  expect_same(m, back);
  EXPECT_EQ(to_json(back), to_json(m));
}

TEST(FormatManifest, WritesFormatNameAndVersion) {
  const auto j = to_json(full_manifest());
  EXPECT_EQ(j.at("format"), kFormatName);
  EXPECT_EQ(j.at("format_version"), kFormatVersion);
  EXPECT_TRUE(j.at("regions").at(0).at("base").is_string());  // addresses as hex text
  EXPECT_EQ(j.at("regions").at(0).at("base"), "0x7f0000000000");
}

TEST(FormatManifest, NewerVersionRefused) {
  auto j = to_json(full_manifest());
  j["format_version"] = kFormatVersion + 1;
  const std::string why = refusal(j);
  EXPECT_NE(why.find("newer"), std::string::npos) << why;
}

TEST(FormatManifest, InvalidVersionRefused) {
  auto j = to_json(full_manifest());
  j["format_version"] = 0;
  EXPECT_NE(refusal(j), "");
  j["format_version"] = "one";
  EXPECT_NE(refusal(j).find("format_version"), std::string::npos);
}

TEST(FormatManifest, NotAManifestRefused) {
  auto j = to_json(full_manifest());
  j["format"] = "something-else";
  EXPECT_NE(refusal(j).find("not a kerncap capture manifest"), std::string::npos);
  EXPECT_NE(refusal(nlohmann::json::array()), "");
}

TEST(FormatManifest, MissingFieldsRefused) {
  const auto full = to_json(full_manifest());
  const std::vector<std::pair<nlohmann::json::json_pointer, std::string>> cases = {
      {nlohmann::json::json_pointer("/format_version"), "format_version"},
      {nlohmann::json::json_pointer("/kernel"), "kernel"},
      {nlohmann::json::json_pointer("/kernel/mangled"), "kernel.mangled"},
      {nlohmann::json::json_pointer("/launch/grid"), "launch.grid"},
      {nlohmann::json::json_pointer("/params/size"), "params.size"},
      {nlohmann::json::json_pointer("/image/file"), "image.file"},
      {nlohmann::json::json_pointer("/regions"), "regions"},
      {nlohmann::json::json_pointer("/regions/1/base"), "regions[1].base"},
      {nlohmann::json::json_pointer("/after/runs/0/file_offset"), "after.runs[0].file_offset"},
  };
  for (const auto& [ptr, field] : cases) {
    SCOPED_TRACE(ptr.to_string());
    auto j = full;
    j.at(ptr.parent_pointer()).erase(ptr.back());
    const std::string why = refusal(j);
    EXPECT_NE(why.find("missing '" + field + "'"), std::string::npos) << why;
  }
}

TEST(FormatManifest, WrongTypeRefused) {
  auto j = to_json(full_manifest());
  j["launch"]["grid"] = "large";
  EXPECT_NE(refusal(j).find("'launch.grid' has the wrong type"), std::string::npos);
}

TEST(FormatManifest, BadAddressRefused) {
  for (const char* bad : {"0xZZ", "", "0x", "7f00 0000", "-0x10"}) {
    SCOPED_TRACE(bad);
    auto j = to_json(full_manifest());
    j["regions"][0]["base"] = bad;
    EXPECT_NE(refusal(j).find("malformed address"), std::string::npos);
  }
  auto j = to_json(full_manifest());
  j["image"]["xxh64"] = "0xnothex";
  EXPECT_NE(refusal(j).find("malformed address"), std::string::npos);
}

TEST(FormatManifest, BadLaunchAttributeBytesRefused) {
  for (const char* bad : {"0", "zz", "0x", "+1", " 1"}) {
    SCOPED_TRACE(bad);
    auto j = to_json(full_manifest());
    j["launch"]["attributes"][0]["raw"] = bad;
    EXPECT_NE(refusal(j), "");
  }
}

TEST(FormatManifest, UnknownMemoryKindRefused) {
  auto j = to_json(full_manifest());
  j["regions"][0]["kind"] = "texture";
  EXPECT_NE(refusal(j).find("'regions[0].kind' is an unknown memory kind 'texture'"), std::string::npos);
}

TEST(FormatManifest, AfterRunOutsideItsRegionRefused) {
  auto j = to_json(full_manifest());
  j["after"]["runs"][0]["size"] = 4097;  // region 0 has 4096 bytes
  EXPECT_NE(refusal(j).find("outside"), std::string::npos);
  j = to_json(full_manifest());
  j["after"]["runs"][0]["region"] = 99;
  EXPECT_NE(refusal(j).find("outside"), std::string::npos);
}

TEST(FormatManifest, MemKindNames) {
  for (MemKind k : {MemKind::Device, MemKind::Pitch, MemKind::Async, MemKind::Managed, MemKind::HostMapped,
                    MemKind::HostRegistered, MemKind::Vmm, MemKind::Global})
    EXPECT_EQ(mem_kind_from_string(to_string(k)), k) << to_string(k);
}

TEST(FormatManifest, FindRegion) {
  const Manifest m = full_manifest();
  ASSERT_NE(m.find_region(2), nullptr);
  EXPECT_EQ(m.find_region(2)->global, "counter");
  EXPECT_EQ(m.find_region(42), nullptr);
}

}  // namespace
}  // namespace kerncap::format

namespace kerncap::format {
namespace {

TEST(FormatManifest, InAppTimeIsOptionalAndChecked) {
  Manifest m = full_manifest();
  EXPECT_FALSE(to_json(m).contains("in_app_median_ns"));  // absent: unknown
  EXPECT_FALSE(from_json(to_json(m)).in_app_median_ns);
  m.in_app_median_ns = 4125.5;
  const Manifest back = from_json(nlohmann::json::parse(to_json(m).dump()));
  ASSERT_TRUE(back.in_app_median_ns);
  EXPECT_DOUBLE_EQ(*back.in_app_median_ns, 4125.5);
  EXPECT_EQ(back.in_app_samples, 0u);  // unknown: not written
  EXPECT_FALSE(to_json(m).contains("in_app_samples"));
  m.in_app_samples = 9;
  m.in_app_launches = 10;
  const Manifest counted = from_json(nlohmann::json::parse(to_json(m).dump()));
  EXPECT_EQ(counted.in_app_samples, 9u);
  EXPECT_EQ(counted.in_app_launches, 10u);
  {
    auto j = to_json(m);
    j["in_app_samples"] = 11;  // more samples than launches
    EXPECT_NE(refusal(j).find("in_app_samples"), std::string::npos);
    j["in_app_samples"] = -1;
    EXPECT_NE(refusal(j).find("in_app_samples"), std::string::npos);
  }
  for (const nlohmann::json& bad : {nlohmann::json(-1), nlohmann::json("4 us"), nlohmann::json(nullptr),
                                    nlohmann::json::array()}) {
    auto j = to_json(m);
    j["in_app_median_ns"] = bad;
    EXPECT_NE(refusal(j).find("in_app_median_ns"), std::string::npos) << bad.dump();
    j = to_json(m);
    j["in_app_between_ns"] = bad;
    EXPECT_NE(refusal(j).find("in_app_between_ns"), std::string::npos) << bad.dump();
  }
  EXPECT_FALSE(counted.in_app_between_ns);  // unknown: absent
  m.in_app_between_ns = 0;                  // known: nothing between two launches
  const Manifest between = from_json(nlohmann::json::parse(to_json(m).dump()));
  ASSERT_TRUE(between.in_app_between_ns);
  EXPECT_DOUBLE_EQ(*between.in_app_between_ns, 0);
}

}  // namespace
}  // namespace kerncap::format
