// footprint.json + footprint.bin: written atomically, read back exactly, and refused with
// a message (never a crash) when damaged, of another version, or of another capture.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <fstream>

#include "scratch_capture.hpp"
#include "common/error.hpp"
#include "footprint/footprint.hpp"
#include "format/footprint.hpp"

namespace kerncap::format {
namespace {

class FootprintFileTest : public kerncap::testing::ScratchDir {
 protected:

  static Footprint sample() {
    Footprint f;
    f.tool_version = "test";
    f.kernel = "_Z9vectorAddPKfS0_Pfi";
    f.image_hash = 0xabcdef;
    f.device_name = "NVIDIA H100";
    for (uint32_t id = 0; id < 3; ++id) {
      RegionFootprint r;
      r.id = id;
      r.kind = id == 2 ? MemKind::Global : MemKind::Device;
      r.global = id == 2 ? "d_hist" : "";
      r.base = 0x7f0000000000ull + id * 0x100000;
      r.size = id == 2 ? 128 : 4096;
      r.read = Bitmap(4, r.size);
      r.written = Bitmap(1, r.size);
      r.rbw = Bitmap(4, r.size);
      if (id < 2) {
        r.read.set_range(0, r.read.bits());
        r.rbw.set_range(0, r.rbw.bits());
      } else {
        r.written.set_range(0, r.size);
        for (uint64_t i = 0; i < r.written.bits(); i += 3) r.read.set(i / 4);
      }
      f.regions.push_back(std::move(r));
    }
    f.escapes.push_back({0x1000, 0x7000000010ull, 4, true, false, false, "4 B before region 0"});
    f.escape_count = 7;
    f.accesses = 3 << 20;
    f.kernel_pc = 0x7000000000ull;
    f.instrumented_ms = 2.5;
    f.plain_ms = 0.0125;
    f.seconds = 1.25;
    f.sanitizer_library = "/x/libsanitizer-public.so";
    return f;
  }

  Manifest manifest_for(const Footprint& f) {
    Manifest m;
    m.mangled_name = f.kernel;
    m.image_hash = f.image_hash;
    for (const auto& r : f.regions) m.regions.push_back({r.id, r.kind, r.base, r.size, "", 0, r.global});
    return m;
  }

  std::string refusal() {
    try {
      read_footprint(out_);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << e.what();
      return e.what();
    }
    return "";
  }

  nlohmann::json json() { return nlohmann::json::parse(std::ifstream(out_ / kFootprintJson)); }
  void put_json(const nlohmann::json& j) { std::ofstream(out_ / kFootprintJson) << j.dump(); }

};

TEST_F(FootprintFileTest, RoundTripsEverything) {
  Footprint f = sample();
  f.regions[1].probed = true;
  write_footprint(out_, f);
  EXPECT_FALSE(fs::exists(out_ / "footprint.json.tmp"));
  EXPECT_FALSE(fs::exists(out_ / "footprint.bin.tmp"));
  const Footprint g = read_footprint(out_);
  ASSERT_EQ(g.regions.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(g.regions[i].read, f.regions[i].read);
    EXPECT_EQ(g.regions[i].written, f.regions[i].written);
    EXPECT_EQ(g.regions[i].rbw, f.regions[i].rbw);
    EXPECT_EQ(g.regions[i].base, f.regions[i].base);
    EXPECT_EQ(g.regions[i].kind, f.regions[i].kind);
    EXPECT_EQ(g.regions[i].global, f.regions[i].global);
    EXPECT_EQ(g.regions[i].probed, i == 1);
  }
  EXPECT_EQ(g.escape_count, 7u);
  ASSERT_EQ(g.escapes.size(), 1u);
  EXPECT_EQ(g.escapes[0].pc, 0x7000000010ull);
  EXPECT_TRUE(g.escapes[0].read);
  EXPECT_EQ(g.kernel_pc, f.kernel_pc);
  EXPECT_EQ(g.accesses, f.accesses);
  EXPECT_DOUBLE_EQ(g.plain_ms, 0.0125);
  // The summary carries the four byte counts per region.
  const auto j = json();
  EXPECT_EQ(j["regions"][0]["read_bytes"], 4096);
  EXPECT_EQ(j["regions"][0]["rbw_bytes"], 4096);
  EXPECT_EQ(j["regions"][2]["written_bytes"], 128);
  EXPECT_EQ(j["regions"][2]["write_only_bytes"], 128 - 4 * g.regions[2].rbw.count());
}

TEST_F(FootprintFileTest, BitmapsAreCompact) {
  write_footprint(out_, sample());
  EXPECT_LT(fs::file_size(out_ / kFootprintBin), 64u);  // 9 bitmaps, mostly single runs
}

TEST_F(FootprintFileTest, RefusesANewerVersion) {
  write_footprint(out_, sample());
  auto j = json();
  j["format_version"] = 99;
  put_json(j);
  EXPECT_NE(refusal().find("version 99"), std::string::npos);
}

TEST_F(FootprintFileTest, RefusesBrokenJsonAndMissingFields) {
  write_footprint(out_, sample());
  std::ofstream(out_ / kFootprintJson) << "{\"format\": ";
  EXPECT_NE(refusal().find("not valid JSON"), std::string::npos);
  write_footprint(out_, sample());
  auto j = json();
  j["regions"][1].erase("bitmaps");
  put_json(j);
  EXPECT_NE(refusal().find("bitmaps"), std::string::npos);
}

TEST_F(FootprintFileTest, RefusesATruncatedOrAlteredBin) {
  write_footprint(out_, sample());
  fs::resize_file(out_ / kFootprintBin, fs::file_size(out_ / kFootprintBin) - 1);
  EXPECT_NE(refusal().find("footprint.bin has"), std::string::npos);
  write_footprint(out_, sample());
  {
    std::fstream bin(out_ / kFootprintBin, std::ios::in | std::ios::out | std::ios::binary);
    bin.seekp(1);
    bin.put('\x55');
  }
  EXPECT_NE(refusal().find("hash"), std::string::npos);
  write_footprint(out_, sample());
  fs::remove(out_ / kFootprintBin);
  EXPECT_NE(refusal().find("missing"), std::string::npos);
}

TEST_F(FootprintFileTest, RefusesBitmapsOutsideTheBinOrOfTheWrongShape) {
  write_footprint(out_, sample());
  auto j = json();
  j["regions"][0]["bitmaps"]["read"]["offset"] = 1u << 30;
  put_json(j);
  EXPECT_NE(refusal().find("outside footprint.bin"), std::string::npos);
  j = json();
  j["regions"][0]["bitmaps"]["read"]["offset"] = 0;
  j["regions"][0]["bitmaps"]["read"]["granule"] = 1;
  put_json(j);
  EXPECT_NE(refusal().find("granule"), std::string::npos);
  j["regions"][0]["bitmaps"]["read"]["granule"] = 4;
  j["regions"][0]["bitmaps"]["read"]["count"] = 5;
  put_json(j);
  EXPECT_NE(refusal().find("summary says 5"), std::string::npos);
  j["regions"][0]["bitmaps"]["read"]["count"] = 1024;
  j["regions"][0]["size"] = 16;  // the run now reaches past the region
  put_json(j);
  EXPECT_NE(refusal().find("past"), std::string::npos);
}

TEST_F(FootprintFileTest, DecoderRefusesGarbage) {
  auto refuse = [](std::vector<uint8_t> data, BitmapEncoding enc, uint64_t count) {
    try {
      decode_bitmap(data, enc, 4, 64, count);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refuse({0x01, 0x00}, BitmapEncoding::Runs, 0).find("middle of a number"), std::string::npos);
  EXPECT_NE(refuse({0x01, 0x00, 0x11}, BitmapEncoding::Runs, 17).find("past"), std::string::npos);
  EXPECT_NE(refuse({0x01, 0x00, 0x01, 0x00}, BitmapEncoding::Runs, 1).find("trailing"), std::string::npos);
  EXPECT_NE(refuse({0x01, 0x00, 0x00}, BitmapEncoding::Runs, 0).find("empty"), std::string::npos);
  EXPECT_NE(refuse({0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, BitmapEncoding::Runs, 1)
                .find("64 bits"),
            std::string::npos);
  EXPECT_NE(refuse({0xff}, BitmapEncoding::Raw, 8).find("bytes"), std::string::npos);
  // 16 granules fit two bytes exactly; a 10-byte region has 3 granules: bits past them are refused.
  try {
    decode_bitmap(std::vector<uint8_t>{0x0f}, BitmapEncoding::Raw, 4, 10, 4);
    ADD_FAILURE() << "padding bits accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past its region"), std::string::npos);
  }
}

TEST_F(FootprintFileTest, LoadOrNoneFindsNothingThenTheFootprintThenRefusesAStaleOne) {
  const Footprint f = sample();
  Capture c;
  c.dir = out_;
  c.manifest = manifest_for(f);
  EXPECT_FALSE(footprint::load_or_none(c).has_value());
  write_footprint(out_, f);
  auto got = footprint::load_or_none(c);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->regions[2].written_bytes(), 128u);
  c.manifest.regions[1].size = 8192;
  try {
    footprint::load_or_none(c);
    ADD_FAILURE() << "a footprint of another capture was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Input);
    EXPECT_NE(std::string(e.what()).find("--force"), std::string::npos);
  }
  c.manifest = manifest_for(f);
  c.manifest.image_hash = 1;
  EXPECT_THROW(footprint::load_or_none(c), Error);
}

}  // namespace
}  // namespace kerncap::format
