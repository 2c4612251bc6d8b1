#pragma once
// Fixture code objects built from tests/fixtures/cubin/*.cu (tests/fixtures/CMakeLists.txt).
// Without nvcc they are not built and the tests that need them skip.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace kerncap::cubin::testing {

#ifdef KERNCAP_CUBIN_FIXTURES
inline const char* const kFixtureDir = KERNCAP_CUBIN_FIXTURES;
#else
inline const char* const kFixtureDir = nullptr;
#endif

inline std::vector<uint8_t> fixture(const std::string& name) {
  const std::string path = std::string(kFixtureDir) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace kerncap::cubin::testing

#define KC_NEED_FIXTURES()                                                       \
  do {                                                                           \
    if (!::kerncap::cubin::testing::kFixtureDir)                                 \
      GTEST_SKIP() << "no nvcc at build time: cubin fixtures were not compiled"; \
  } while (0)
