// CUDA arrays, texture and surface objects: the tracker fed fake CUPTI callbacks, and the
// plan that finds handles in parameter bytes (by-value structs included) and refuses what
// replay could not re-create.
#include <gtest/gtest.h>

#include <cstring>

#include "capture/texture_plan.hpp"
#include "capture/texture_tracker.hpp"
#include "capture_fakes.hpp"

using namespace kerncap::capture;
using kerncap::capture::testing::FakeCall;
namespace format = kerncap::format;

namespace {

template <typename P>
bool feed(TextureTracker& t, CUpti_CallbackId cbid, const P& p, CUresult result = CUDA_SUCCESS,
          CUpti_ApiCallbackSite site = CUPTI_API_EXIT) {
  FakeCall<P> call(p, site);
  call.result = result;
  return t.on_driver_api(cbid, &call.cb);
}

CUarray fake_array(uint64_t v) { return reinterpret_cast<CUarray>(v); }
CUmipmappedArray fake_mip(uint64_t v) { return reinterpret_cast<CUmipmappedArray>(v); }

CUarray make_array(TextureTracker& t, uint64_t h, size_t w, size_t hgt, size_t d, unsigned flags,
                   CUarray_format f = CU_AD_FORMAT_FLOAT, unsigned ch = 1) {
  CUarray out = fake_array(h);
  CUDA_ARRAY3D_DESCRIPTOR desc{w, hgt, d, f, ch, flags};
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, cuArray3DCreate_v2_params{&out, &desc}));
  return out;
}

CUtexObject make_texture(TextureTracker& t, uint64_t h, const CUDA_RESOURCE_DESC& res,
                         const CUDA_RESOURCE_VIEW_DESC* view = nullptr) {
  CUtexObject out = h;
  CUDA_TEXTURE_DESC td{};
  td.addressMode[0] = CU_TR_ADDRESS_MODE_CLAMP;
  td.filterMode = CU_TR_FILTER_MODE_LINEAR;
  td.flags = CU_TRSF_NORMALIZED_COORDINATES;
  td.borderColor[2] = 0.5f;
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuTexObjectCreate, cuTexObjectCreate_params{&out, &res, &td, view}));
  return out;
}

CUsurfObject make_surface(TextureTracker& t, uint64_t h, CUarray a) {
  CUsurfObject out = h;
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = a;
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuSurfObjectCreate, cuSurfObjectCreate_params{&out, &res}));
  return out;
}

CUDA_RESOURCE_DESC array_res(CUarray a) {
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_ARRAY;
  r.res.array.hArray = a;
  return r;
}

CUDA_RESOURCE_DESC linear_res(CUdeviceptr p, size_t bytes) {
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_LINEAR;
  r.res.linear.devPtr = p;
  r.res.linear.format = CU_AD_FORMAT_FLOAT;
  r.res.linear.numChannels = 1;
  r.res.linear.sizeInBytes = bytes;
  return r;
}

std::vector<uint8_t> words(std::initializer_list<uint64_t> w) {
  std::vector<uint8_t> out(w.size() * 8);
  size_t i = 0;
  for (uint64_t v : w) std::memcpy(out.data() + 8 * i++, &v, 8);
  return out;
}

}  // namespace

TEST(CaptureTextureTracker, ArraysOfEveryShapeAndTheirDestruction) {
  TextureTracker t;
  CUarray a2d = fake_array(0x1000);
  CUDA_ARRAY_DESCRIPTOR d2{64, 32, CU_AD_FORMAT_UNSIGNED_INT8, 4};
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2, cuArrayCreate_v2_params{&a2d, &d2}));
  auto a = t.array(0x1000);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->desc.width, 64u);
  EXPECT_EQ(a->desc.height, 32u);
  EXPECT_EQ(a->desc.depth, 0u);
  EXPECT_EQ(a->desc.channels, 4u);
  EXPECT_EQ(a->desc.format, static_cast<uint32_t>(CU_AD_FORMAT_UNSIGNED_INT8));

  make_array(t, 0x2000, 16, 16, 8, CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST);
  a = t.array(0x2000);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->desc.depth, 8u);
  EXPECT_EQ(a->desc.flags, static_cast<uint32_t>(CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST));

  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy, cuArrayDestroy_params{fake_array(0x2000)}));
  EXPECT_FALSE(t.array(0x2000));
  EXPECT_TRUE(t.array(0x1000));
}

TEST(CaptureTextureTracker, FailedCallsAndEntriesAreNotTracked) {
  TextureTracker t;
  CUarray a = fake_array(0x1000);
  CUDA_ARRAY3D_DESCRIPTOR d{8, 8, 0, CU_AD_FORMAT_FLOAT, 1, 0};
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, cuArray3DCreate_v2_params{&a, &d},
                   CUDA_ERROR_OUT_OF_MEMORY));
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2, cuArray3DCreate_v2_params{&a, &d}, CUDA_SUCCESS,
                   CUPTI_API_ENTER));
  EXPECT_FALSE(t.array(0x1000));
  // Not a texture call at all: left to the other trackers.
  EXPECT_FALSE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, cuMemFree_v2_params{0}));
}

TEST(CaptureTextureTracker, MipmappedArraysAndTheirLevels) {
  TextureTracker t;
  CUmipmappedArray m = fake_mip(0x5000);
  CUDA_ARRAY3D_DESCRIPTOR d{64, 16, 0, CU_AD_FORMAT_FLOAT, 2, 0};
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate, cuMipmappedArrayCreate_params{&m, &d, 4}));
  auto mm = t.mipmapped(0x5000);
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->desc.levels, 4u);
  CUarray level = fake_array(0x5100);
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayGetLevel, cuMipmappedArrayGetLevel_params{&level, m, 3}));
  auto l = t.array(0x5100);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->desc.width, 8u);
  EXPECT_EQ(l->desc.height, 2u);
  EXPECT_EQ(l->desc.levels, 0u);
  EXPECT_EQ(l->parent, 0x5000u);
  EXPECT_EQ(l->level, 3u);
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy, cuMipmappedArrayDestroy_params{m}));
  EXPECT_FALSE(t.mipmapped(0x5000));
  EXPECT_FALSE(t.array(0x5100));  // its levels go with it
}

TEST(CaptureTextureTracker, ObjectsKeepTheirDescriptors) {
  TextureTracker t;
  EXPECT_FALSE(t.has_objects());
  CUarray a = make_array(t, 0x1000, 32, 32, 0, CUDA_ARRAY3D_SURFACE_LDST);
  CUDA_RESOURCE_VIEW_DESC view{};
  view.format = CU_RES_VIEW_FORMAT_FLOAT_1X32;
  view.width = 32;
  view.height = 32;
  make_texture(t, 7, array_res(a), &view);
  make_surface(t, 9, a);
  EXPECT_TRUE(t.has_objects());
  auto o = t.objects(7);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_FALSE(o[0].surface);
  ASSERT_TRUE(o[0].texture);
  EXPECT_EQ(o[0].texture->filterMode, CU_TR_FILTER_MODE_LINEAR);
  ASSERT_TRUE(o[0].view);
  EXPECT_EQ(o[0].view->width, 32u);
  o = t.objects(9);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_TRUE(o[0].surface);
  EXPECT_FALSE(o[0].texture);
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuTexObjectDestroy, cuTexObjectDestroy_params{7}));
  EXPECT_TRUE(feed(t, CUPTI_DRIVER_TRACE_CBID_cuSurfObjectDestroy, cuSurfObjectDestroy_params{9}));
  EXPECT_TRUE(t.objects(7).empty());
  EXPECT_TRUE(t.objects(9).empty());
  EXPECT_FALSE(t.has_objects());
}

TEST(CaptureTexturePlan, NoObjectsNoWork) {
  TextureTracker t;
  const auto p = words({1, 2, 3});
  const TexturePlan plan = plan_textures(p, {}, t);
  EXPECT_TRUE(plan.textures.empty());
  EXPECT_TRUE(plan.refusal.empty());
}

TEST(CaptureTexturePlan, HandlesInScalarsAndByValueStructs) {
  TextureTracker t;
  CUarray a = make_array(t, 0x1000, 32, 16, 0, CUDA_ARRAY3D_SURFACE_LDST);
  make_texture(t, 0x11, array_res(a));
  make_surface(t, 0x22, a);
  make_texture(t, 0x33, linear_res(0x7f0000000000, 4096));
  // (float* out, tex, struct { int n; int pad; surf; tex }, int) with the driver's layout.
  const auto p = words({0x7f0000001000, 0x11, 5, 0x22, 0x33, 0x11});
  const std::vector<format::ParamSlot> slots{{0, 8}, {8, 8}, {16, 24}, {40, 4}};
  const TexturePlan plan = plan_textures(p, slots, t);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  // Offset 40 holds 0x11 but is a 4-byte parameter: not a handle.
  ASSERT_EQ(plan.textures.handles.size(), 3u);
  EXPECT_EQ(plan.textures.handles[0], (format::HandleSlot{8, 0}));
  EXPECT_EQ(plan.textures.handles[1].offset, 24u);
  EXPECT_EQ(plan.textures.handles[2].offset, 32u);
  ASSERT_EQ(plan.textures.objects.size(), 3u);
  EXPECT_FALSE(plan.textures.objects[0].surface);
  EXPECT_TRUE(plan.textures.objects[1].surface);
  EXPECT_EQ(plan.textures.objects[2].resource, format::ResourceType::Linear);
  // One array, though two objects use it.
  ASSERT_EQ(plan.textures.arrays.size(), 1u);
  EXPECT_EQ(plan.sources[0].handle, 0x1000u);
  EXPECT_EQ(plan.textures.objects[0].array, 0u);
  EXPECT_EQ(plan.textures.objects[1].array, 0u);
  ASSERT_TRUE(plan.textures.objects[0].texture);
  EXPECT_EQ(plan.textures.objects[0].texture->filter_mode, 1u);
  EXPECT_EQ(plan.textures.objects[0].texture->border_color[2], 0.5f);
  // The linear texture's memory must be captured.
  ASSERT_EQ(plan.memory.size(), 1u);
  EXPECT_EQ(plan.memory[0].address, 0x7f0000000000u);
  EXPECT_EQ(plan.memory[0].bytes, 4096u);
}

TEST(CaptureTexturePlan, UnknownLayoutLooksAtEveryAlignedWord) {
  TextureTracker t;
  make_texture(t, 0x44, linear_res(0x7f0000000000, 64));
  const auto p = words({0, 0x44});
  const TexturePlan plan = plan_textures(p, {}, t);
  ASSERT_EQ(plan.textures.handles.size(), 1u);
  EXPECT_EQ(plan.textures.handles[0].offset, 8u);
}

TEST(CaptureTexturePlan, Pitch2DSpansPitchTimesRows) {
  TextureTracker t;
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_PITCH2D;
  r.res.pitch2D.devPtr = 0x7f0000000000;
  r.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  r.res.pitch2D.numChannels = 2;
  r.res.pitch2D.width = 100;
  r.res.pitch2D.height = 10;
  r.res.pitch2D.pitchInBytes = 1024;
  make_texture(t, 0x55, r);
  const TexturePlan plan = plan_textures(words({0x55}), {{0, 8}}, t);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  ASSERT_EQ(plan.memory.size(), 1u);
  EXPECT_EQ(plan.memory[0].bytes, 9u * 1024 + 100 * 8);
}

TEST(CaptureTexturePlan, MipmappedArraysAreCapturedWhole) {
  TextureTracker t;
  CUmipmappedArray m = fake_mip(0x5000);
  CUDA_ARRAY3D_DESCRIPTOR d{64, 64, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
  feed(t, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate, cuMipmappedArrayCreate_params{&m, &d, 7});
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  r.res.mipmap.hMipmappedArray = m;
  make_texture(t, 0x66, r);
  const TexturePlan plan = plan_textures(words({0x66}), {{0, 8}}, t);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  ASSERT_EQ(plan.textures.arrays.size(), 1u);
  EXPECT_EQ(plan.textures.arrays[0].levels, 7u);
  EXPECT_TRUE(plan.sources[0].mipmapped);
  EXPECT_EQ(plan.textures.objects[0].resource, format::ResourceType::MipmappedArray);
  // 64x64 RGBA8 down to 1x1.
  EXPECT_EQ(format::array_bytes(plan.textures.arrays[0]), 4u * (4096 + 1024 + 256 + 64 + 16 + 4 + 1));
}

TEST(CaptureTexturePlan, RefusesWhatReplayCannotRecreate) {
  auto refusal_for = [](auto setup) {
    TextureTracker t;
    setup(t);
    return plan_textures(words({0x77}), {{0, 8}}, t).refusal;
  };
  // An array kerncap never saw created (graphics interop).
  std::string why = refusal_for([](TextureTracker& t) { make_texture(t, 0x77, array_res(fake_array(0xdead))); });
  EXPECT_NE(why.find("did not see created"), std::string::npos) << why;
  EXPECT_NE(why.find("offset 0"), std::string::npos) << why;
  // A sparse array.
  why = refusal_for([](TextureTracker& t) {
    make_texture(t, 0x77, array_res(make_array(t, 0x1000, 64, 64, 0, CUDA_ARRAY3D_SPARSE)));
  });
  EXPECT_NE(why.find("sparse"), std::string::npos) << why;
  // A block-compressed format.
  why = refusal_for([](TextureTracker& t) {
    make_texture(t, 0x77, array_res(make_array(t, 0x1000, 64, 64, 0, 0, CU_AD_FORMAT_BC1_UNORM, 4)));
  });
  EXPECT_NE(why.find("block-compressed"), std::string::npos) << why;
  // A texture and a surface with the same handle value.
  why = refusal_for([](TextureTracker& t) {
    CUarray a = make_array(t, 0x1000, 8, 8, 0, CUDA_ARRAY3D_SURFACE_LDST);
    make_texture(t, 0x77, array_res(a));
    make_surface(t, 0x77, a);
  });
  EXPECT_NE(why.find("both"), std::string::npos) << why;
  // A surface over an array not made for surface load/store.
  why = refusal_for([](TextureTracker& t) { make_surface(t, 0x77, make_array(t, 0x1000, 8, 8, 0, 0)); });
  EXPECT_NE(why.find("surface load/store"), std::string::npos) << why;
  // An unknown resource type.
  why = refusal_for([](TextureTracker& t) {
    CUDA_RESOURCE_DESC r{};
    r.resType = static_cast<CUresourcetype>(9);
    make_texture(t, 0x77, r);
  });
  EXPECT_NE(why.find("resource type 9"), std::string::npos) << why;
}

TEST(CaptureTexturePlan, LevelAndItsMipmappedArrayTogetherRefused) {
  TextureTracker t;
  CUmipmappedArray m = fake_mip(0x5000);
  CUDA_ARRAY3D_DESCRIPTOR d{64, 64, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST};
  feed(t, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate, cuMipmappedArrayCreate_params{&m, &d, 3});
  CUarray level = fake_array(0x5100);
  feed(t, CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayGetLevel, cuMipmappedArrayGetLevel_params{&level, m, 1});
  CUDA_RESOURCE_DESC r{};
  r.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  r.res.mipmap.hMipmappedArray = m;
  make_texture(t, 0x10, r);
  make_surface(t, 0x20, level);
  // The level alone is an ordinary array.
  TexturePlan plan = plan_textures(words({0x20}), {{0, 8}}, t);
  ASSERT_TRUE(plan.refusal.empty()) << plan.refusal;
  EXPECT_EQ(plan.textures.arrays[0].width, 32u);
  plan = plan_textures(words({0x10, 0x20}), {{0, 8}, {8, 8}}, t);
  EXPECT_NE(plan.refusal.find("both whole and through its level"), std::string::npos) << plan.refusal;
}
