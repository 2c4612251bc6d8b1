// Address text and byte sizes (src/common/hex.hpp).
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap {
namespace {

TEST(CommonHex, FormatsAddresses) {
  EXPECT_EQ(hex_addr(0), "0x0");
  EXPECT_EQ(hex_addr(0x7f0000001000ull), "0x7f0000001000");
  EXPECT_EQ(hex_addr(UINT64_MAX), "0xffffffffffffffff");
}

TEST(CommonHex, ParsesWhatItFormats) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{0xdeadbeef}, uint64_t{0x7f0000001000}, UINT64_MAX})
    EXPECT_EQ(parse_hex_addr(hex_addr(v)), v);
  EXPECT_EQ(parse_hex_addr("0X1aF"), 0x1afu);
  EXPECT_EQ(parse_hex_addr("ff"), 0xffu);  // the prefix is optional
}

TEST(CommonHex, RefusesMalformedAddresses) {
  for (const char* bad : {"", "0x", "0xg1", "0x1 ", " 0x1", "-1", "0x-1", "0x1ffffffffffffffff", "1.5", "0x0x1"}) {
    try {
      parse_hex_addr(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Input) << bad;
      EXPECT_NE(std::string(e.what()).find("malformed address"), std::string::npos) << e.what();
    }
  }
}

TEST(CommonHex, HumanBytes) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1024), "1.0 KiB");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(5ull << 20), "5.0 MiB");
  EXPECT_EQ(human_bytes(3ull << 29), "1.5 GiB");
  EXPECT_EQ(human_bytes(1ull << 40), "1.0 TiB");
  EXPECT_EQ(human_bytes(1ull << 50), "1024.0 TiB");  // TiB is the largest unit
}

}  // namespace
}  // namespace kerncap
