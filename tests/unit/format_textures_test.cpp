// The manifest's "textures" section: a round trip keeps every field, the version it needs
// is 4 (3 without textures), and bad input (sizes, formats, extents, references, handle
// slots) is refused with a message naming the field before anything is allocated.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "format/manifest.hpp"

namespace kerncap::format {
namespace {

// A launch (out, tex, struct{int; surf}, linear tex) over a 2D layered float array with a
// surface, and a linear texture over region 0.
Manifest texture_manifest() {
  Manifest m;
  m.mangled_name = "_Z1kPf";
  m.image_file = "image/1.cubin";
  m.params_size = 40;
  m.params = {{0, 8}, {8, 8}, {16, 16}, {32, 8}};
  m.regions = {{0, MemKind::Device, 0x7f0000000000ull, 1 << 20, "", 0, ""},
               {1, MemKind::Array, kArrayRegionBase, 64 * 32 * 4 * 3, "", 0, ""}};
  m.regions[0].stored.emplace();
  m.regions[1].stored.emplace();
  ArrayRecord a;
  a.id = 0;
  a.region = 1;
  a.handle = 0x55550000;
  a.width = 64;
  a.height = 32;
  a.depth = 3;
  a.format = 0x20;  // float
  a.channels = 1;
  a.flags = kArrayLayered | kArraySurfaceLdst;
  m.textures.arrays = {a};
  TexObjectRecord tex;
  tex.id = 0;
  tex.handle = 1;
  tex.resource = ResourceType::Array;
  tex.array = 0;
  tex.texture = TextureDesc{{1, 1, 0}, 1, 0x02, 0, 0, 0.5f, 0, 1, {0, 0.25f, 0, 1}};
  tex.view = ViewDesc{0, 64, 32, 3, 0, 0, 0, 2};
  TexObjectRecord surf;
  surf.id = 1;
  surf.handle = 2;
  surf.surface = true;
  surf.array = 0;
  TexObjectRecord lin;
  lin.id = 2;
  lin.handle = 3;
  lin.resource = ResourceType::Linear;
  lin.address = 0x7f0000001000ull;
  lin.format = 0x01;
  lin.channels = 4;
  lin.size = 4096;
  TexObjectRecord pitch;
  pitch.id = 3;
  pitch.handle = 4;
  pitch.resource = ResourceType::Pitch2D;
  pitch.address = 0x7f0000010000ull;
  pitch.format = 0x10;
  pitch.channels = 2;
  pitch.width = 100;
  pitch.height = 20;
  pitch.pitch = 512;
  pitch.texture = TextureDesc{};
  lin.texture = TextureDesc{};
  m.textures.objects = {tex, surf, lin, pitch};
  m.textures.handles = {{8, 0}, {24, 1}, {32, 2}};
  m.format_version = format_version_for(m);
  return m;
}

std::string refusal(const nlohmann::json& j) {
  try {
    from_json(j);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
    return e.what();
  }
  return "";
}

std::string refusal(const Manifest& m) { return refusal(nlohmann::json::parse(to_json(m).dump())); }

}  // namespace

TEST(FormatTextures, RoundTrip) {
  const Manifest m = texture_manifest();
  EXPECT_EQ(m.format_version, 4);
  const auto j = to_json(m);
  const Manifest back = from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  ASSERT_EQ(back.textures.arrays.size(), 1u);
  EXPECT_EQ(back.textures.arrays[0].flags, kArrayLayered | kArraySurfaceLdst);
  EXPECT_EQ(back.textures.arrays[0].handle, 0x55550000u);
  ASSERT_EQ(back.textures.objects.size(), 4u);
  EXPECT_EQ(back.textures.objects[0].texture, m.textures.objects[0].texture);
  EXPECT_EQ(back.textures.objects[0].view, m.textures.objects[0].view);
  EXPECT_TRUE(back.textures.objects[1].surface);
  EXPECT_EQ(back.textures.objects[3].pitch, 512u);
  EXPECT_EQ(back.textures.handles, m.textures.handles);
  EXPECT_EQ(back.regions[1].kind, MemKind::Array);
}

TEST(FormatTextures, VersionThreeWithoutTextures) {
  Manifest m;
  EXPECT_EQ(format_version_for(m), 3);
  auto j = to_json(texture_manifest());
  j["format_version"] = 3;
  const std::string why = refusal(j);
  EXPECT_NE(why.find("version 3 or older"), std::string::npos) << why;
}

TEST(FormatTextures, ArrayLayout) {
  ArrayRecord a;
  a.width = 10;
  a.format = 0x10;  // half
  a.channels = 2;
  EXPECT_EQ(array_bytes(a), 40u);  // 1D: one row
  a.height = 3;
  a.depth = 5;
  EXPECT_EQ(array_bytes(a), 40u * 15);
  a.levels = 2;  // a 3D mipmap: level 1 is 5x1x2
  EXPECT_EQ(level_extent(a, 1).row_bytes, 20u);
  EXPECT_EQ(level_extent(a, 1).rows, 1u);
  EXPECT_EQ(level_extent(a, 1).slices, 2u);
  a.flags = kArrayLayered;  // layers do not shrink
  EXPECT_EQ(level_extent(a, 1).slices, 5u);
  EXPECT_EQ(array_format_bytes(0x20), 4u);
  EXPECT_EQ(array_format_bytes(0x91), 0u);  // BC1: not replayed
  EXPECT_EQ(array_format_from_name("half"), 0x10u);
  EXPECT_FALSE(array_format_from_name("bc1"));
}

TEST(FormatTextures, BadFieldsRefused) {
  const auto base = to_json(texture_manifest());
  auto expect = [&](auto edit, const std::string& needle) {
    auto j = base;
    edit(j);
    const std::string why = refusal(j);
    EXPECT_NE(why.find(needle), std::string::npos) << needle << ": " << why;
  };
  expect([](auto& j) { j["textures"]["arrays"][0]["format"] = "bc7"; }, "not an array format");
  expect([](auto& j) { j["textures"]["arrays"][0]["channels"] = 3; }, "1, 2 or 4");
  expect([](auto& j) { j["textures"]["arrays"][0]["width"] = uint64_t{1} << 40; }, "textures.arrays[0].width");
  expect([](auto& j) { j["textures"]["arrays"][0]["width"] = 0; }, "textures.arrays[0].width");
  expect([](auto& j) { j["textures"]["arrays"][0]["flags"] = 0x40; }, "does not re-create");
  expect([](auto& j) { j["textures"]["arrays"][0]["levels"] = 99; }, "levels");
  expect([](auto& j) { j["textures"]["objects"][0]["kind"] = "sampler"; }, "not texture or surface");
  expect([](auto& j) { j["textures"]["objects"][0]["resource"]["type"] = "tensor"; }, "not a resource type");
  expect([](auto& j) { j["textures"]["objects"][0]["texture"]["flags"] = 0x80; }, "unknown texture flags");
  expect([](auto& j) { j["textures"]["objects"][0]["texture"]["address_mode"][0] = 7; }, "address_mode");
  expect([](auto& j) { j["textures"]["handles"][0] = {8}; }, "expected [offset, object]");
  expect([](auto& j) { j["textures"]["arrays"] = nullptr; }, "textures.arrays");
}

TEST(FormatTextures, InconsistentManifestsRefused) {
  auto expect = [](auto edit, const std::string& needle) {
    Manifest m = texture_manifest();
    edit(m);
    const std::string why = refusal(m);
    EXPECT_NE(why.find(needle), std::string::npos) << needle << ": " << why;
  };
  // The array's region holds another number of bytes than its shape says.
  expect([](Manifest& m) { m.regions[1].size += 4; }, "holds 24576 bytes but its region 1 has 24580");
  expect([](Manifest& m) { m.textures.arrays[0].region = 0; }, "not a region of kind array");
  expect([](Manifest& m) { m.textures.arrays[0].region = 9; }, "not a region of kind array");
  expect([](Manifest& m) { m.regions[1].base = 0x1000; }, "only they, lie at or above 0xffff000000000000");
  expect([](Manifest& m) { m.regions[0].base = kArrayRegionBase + (1 << 20); m.textures.objects.resize(2); m.textures.handles.resize(2); },
         "only they, lie at or above");
  expect([](Manifest& m) { m.textures.arrays.clear(); m.textures.objects.resize(0); m.textures.handles.clear(); },
         "no textures.arrays entry");
  expect([](Manifest& m) { m.textures.objects[0].array = 4; }, "refers to array 4");
  expect([](Manifest& m) { m.textures.objects[0].resource = ResourceType::MipmappedArray; }, "not a mipmapped array");
  expect([](Manifest& m) { m.textures.objects[0].texture.reset(); }, "without its texture description");
  expect([](Manifest& m) { m.textures.arrays[0].flags = kArrayLayered; }, "not created for surface");
  expect([](Manifest& m) { m.textures.objects[1].resource = ResourceType::Linear; m.textures.objects[1].size = 8;
                           m.textures.objects[1].address = 0x7f0000000000ull; m.textures.objects[1].format = 1; },
         "surfaces are over arrays");
  // Linear memory outside every captured region, or in an omitted one.
  expect([](Manifest& m) { m.textures.objects[2].address = 0x100; }, "no captured region holds");
  expect([](Manifest& m) { m.textures.objects[2].size = 2 << 20; }, "no captured region holds");
  expect([](Manifest& m) { m.textures.objects[3].address = UINT64_MAX - 100; }, "overflows");
  expect([](Manifest& m) { m.textures.objects[3].pitch = 100; }, "less than a row");
  expect([](Manifest& m) { m.regions[0].omitted = true; }, "omitted");
  // Handle slots: inside the parameters, aligned, apart, naming an object.
  expect([](Manifest& m) { m.textures.handles[0].offset = 36; }, "aligned 8-byte word");
  expect([](Manifest& m) { m.textures.handles[0].offset = 40; }, "aligned 8-byte word");
  expect([](Manifest& m) { m.textures.handles[1].offset = 8; }, "repeats offset 8");
  expect([](Manifest& m) { m.textures.handles[0].object = 7; }, "names object 7");
  // Shapes CUDA does not have.
  expect([](Manifest& m) { m.textures.arrays[0].flags |= kArrayCubemap; }, "cube map");
  expect([](Manifest& m) { m.textures.arrays[0].levels = 9; m.regions[1].size = array_bytes(m.textures.arrays[0]); },
         "mipmap levels");
}

}  // namespace kerncap::format
