// ImageStore::find among images that hold a kernel of the same name (autotuned Triton
// configurations): the module binding when known, else the launched function's registers
// and launch bounds, else load order.
#include "capture/image_store.hpp"

#include <gtest/gtest.h>

#include "cubin_fixtures.hpp"

namespace kerncap::capture {
namespace {

using cubin::testing::fixture;

TEST(CaptureImageStore, SameNamedImagesAreToldApartByTheLaunchedFunction) {
  KC_NEED_FIXTURES();
  const auto b256 = fixture("bounds256_sm90.cubin");
  const auto b128 = fixture("bounds128_sm90.cubin");
  const std::vector<names::Matcher> matchers{names::Matcher("kc_scale", false)};
  ImageStore store(matchers, "");
  const uint64_t h256 = store.on_module_loaded(b256.data(), b256.size());
  const uint64_t h128 = store.on_module_loaded(b128.data(), b128.size());  // loaded last
  ASSERT_NE(h256, 0u);
  ASSERT_NE(h128, 0u);
  ASSERT_NE(h256, h128);

  // Nothing known of the launch: the most recently loaded.
  ASSERT_NE(store.find("kc_scale", {}), nullptr);
  EXPECT_EQ(store.find("kc_scale", {})->hash, h128);
  // Launched with 256 threads a block (the driver's maximum 256): only the image bounded at
  // 256 can have been launched, though the other was loaded later.
  const FunctionFacts launched256{.sm = 90, .registers = -1, .max_threads = 256, .block_threads = 256};
  EXPECT_EQ(store.find("kc_scale", {}, nullptr, launched256)->hash, h256);
  // The driver's maximum alone decides too (a launch of fewer threads).
  const FunctionFacts max256{.sm = 90, .registers = -1, .max_threads = 256, .block_threads = 64};
  EXPECT_EQ(store.find("kc_scale", {}, nullptr, max256)->hash, h256);
  // Both fit a 128-thread function of unknown registers: load order decides, as before.
  const FunctionFacts launched128{.sm = 90, .registers = -1, .max_threads = 128, .block_threads = 128};
  EXPECT_EQ(store.find("kc_scale", {}, nullptr, launched128)->hash, h128);
  // Facts that no image fits change nothing (never worse than load order).
  const FunctionFacts none{.sm = 90, .registers = -1, .max_threads = 1024, .block_threads = 1024};
  EXPECT_EQ(store.find("kc_scale", {}, nullptr, none)->hash, h128);
  // A module bound at load is exact and wins over the facts.
  int module = 0;
  store.bind_module(&module, h256);
  EXPECT_EQ(store.find("kc_scale", {}, &module, launched128)->hash, h256);
  // A binding inferred later (an image seen during a launch) never overrides it...
  store.bind_module(&module, h128, false);
  EXPECT_EQ(store.find("kc_scale", {}, &module, launched128)->hash, h256);
  // ...until the module is unloaded (its handle may then be reused).
  store.unbind_module(&module);
  store.bind_module(&module, h128, false);
  EXPECT_EQ(store.find("kc_scale", {}, &module, launched256)->hash, h128);
}

}  // namespace
}  // namespace kerncap::capture
