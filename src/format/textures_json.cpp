#include "format/textures_json.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "common/hex.hpp"

namespace kerncap::format {
namespace {

std::string format_name(const JsonField& f) {
  const std::string s = f.str(32);
  if (!array_format_from_name(s))
    f.fail(fmt::format("is '{}', not an array format kerncap replays (uint8, uint16, uint32, int8, int16, int32, "
                       "half, float)",
                       s));
  return s;
}

uint32_t channels(const JsonField& f) {
  const uint32_t c = f.u32(1, 4);
  if (c == 3) f.fail("is 3: CUDA arrays and textures have 1, 2 or 4 channels");
  return c;
}

nlohmann::json texture_json(const TextureDesc& d) {
  return {{"address_mode", d.address_mode},
          {"filter_mode", d.filter_mode},
          {"flags", d.flags},
          {"max_anisotropy", d.max_anisotropy},
          {"mipmap_filter_mode", d.mipmap_filter_mode},
          {"mipmap_level_bias", d.mipmap_level_bias},
          {"min_mipmap_level_clamp", d.min_mipmap_level_clamp},
          {"max_mipmap_level_clamp", d.max_mipmap_level_clamp},
          {"border_color", d.border_color}};
}

float finite_float(const JsonField& f) {
  const double v = f.number();
  if (v < -1e30 || v > 1e30) f.fail("is out of range for a texture setting");
  return static_cast<float>(v);
}

TextureDesc read_texture(const JsonField& f) {
  TextureDesc d;
  const JsonField am = f.at("address_mode");
  if (am.array_size() != 3) am.fail(fmt::format("has {} elements, expected 3", am.array_size()));
  for (size_t i = 0; i < 3; ++i) d.address_mode[i] = am.elem(i).u32(0, kMaxAddressMode);
  d.filter_mode = f.at("filter_mode").u32(0, kMaxFilterMode);
  const JsonField flags = f.at("flags");
  d.flags = flags.u32();
  if (d.flags & ~kTextureFlagsMask) flags.fail(fmt::format("holds unknown texture flags ({:#x})", d.flags));
  d.max_anisotropy = f.at("max_anisotropy").u32(0, kMaxAnisotropy);
  d.mipmap_filter_mode = f.at("mipmap_filter_mode").u32(0, kMaxFilterMode);
  d.mipmap_level_bias = finite_float(f.at("mipmap_level_bias"));
  d.min_mipmap_level_clamp = finite_float(f.at("min_mipmap_level_clamp"));
  d.max_mipmap_level_clamp = finite_float(f.at("max_mipmap_level_clamp"));
  const JsonField bc = f.at("border_color");
  if (bc.array_size() != 4) bc.fail(fmt::format("has {} elements, expected 4", bc.array_size()));
  for (size_t i = 0; i < 4; ++i) d.border_color[i] = finite_float(bc.elem(i));
  return d;
}

nlohmann::json view_json(const ViewDesc& v) {
  return {{"format", v.format},         {"width", v.width},           {"height", v.height},
          {"depth", v.depth},           {"first_level", v.first_level}, {"last_level", v.last_level},
          {"first_layer", v.first_layer}, {"last_layer", v.last_layer}};
}

ViewDesc read_view(const JsonField& f) {
  ViewDesc v;
  v.format = f.at("format").u32(0, kMaxViewFormat);
  v.width = f.at("width").u64(0, kMaxArrayWidth);
  v.height = f.at("height").u64(0, kMaxArrayHeight);
  v.depth = f.at("depth").u64(0, kMaxArrayDepth);
  v.first_level = f.at("first_level").u32(0, kMaxArrayLevels - 1);
  v.last_level = f.at("last_level").u32(0, kMaxArrayLevels - 1);
  v.first_layer = f.at("first_layer").u32(0, static_cast<uint32_t>(kMaxArrayDepth));
  v.last_layer = f.at("last_layer").u32(0, static_cast<uint32_t>(kMaxArrayDepth));
  return v;
}

ResourceType resource_type(const JsonField& f) {
  const std::string s = f.str(32);
  for (auto t : {ResourceType::Array, ResourceType::MipmappedArray, ResourceType::Linear, ResourceType::Pitch2D})
    if (s == to_string(t)) return t;
  f.fail(fmt::format("is '{}', not a resource type (array, mipmapped_array, linear, pitch2d)", s));
}

}  // namespace

nlohmann::json textures_to_json(const Textures& t) {
  using nlohmann::json;
  json arrays = json::array();
  for (const auto& a : t.arrays)
    arrays.push_back({{"id", a.id},
                      {"region", a.region},
                      {"handle", hex_addr(a.handle)},
                      {"width", a.width},
                      {"height", a.height},
                      {"depth", a.depth},
                      {"format", array_format_name(a.format)},
                      {"channels", a.channels},
                      {"flags", a.flags},
                      {"levels", a.levels}});
  json objects = json::array();
  for (const auto& o : t.objects) {
    json res = {{"type", to_string(o.resource)}};
    if (o.resource == ResourceType::Array || o.resource == ResourceType::MipmappedArray) {
      res["array"] = o.array;
    } else {
      res["address"] = hex_addr(o.address);
      res["format"] = array_format_name(o.format);
      res["channels"] = o.channels;
      if (o.resource == ResourceType::Linear) {
        res["size"] = o.size;
      } else {
        res["width"] = o.width;
        res["height"] = o.height;
        res["pitch"] = o.pitch;
      }
    }
    json jo = {{"id", o.id}, {"handle", hex_addr(o.handle)}, {"kind", o.surface ? "surface" : "texture"},
               {"resource", res}};
    if (o.texture) jo["texture"] = texture_json(*o.texture);
    if (o.view) jo["view"] = view_json(*o.view);
    objects.push_back(jo);
  }
  json handles = json::array();
  for (const auto& h : t.handles) handles.push_back(json::array({h.offset, h.object}));
  return {{"arrays", arrays}, {"objects", objects}, {"handles", handles}};
}

Textures textures_from_json(const JsonField& f) {
  Textures t;
  const JsonField arrays = f.at("arrays");
  for (size_t i = 0, n = arrays.array_size(kMaxTextureObjects); i < n; ++i) {
    const JsonField a = arrays.elem(i);
    ArrayRecord r;
    r.id = a.at("id").u32();
    r.region = a.at("region").u32();
    r.handle = a.at("handle").hex();
    r.width = a.at("width").u64(1, kMaxArrayWidth);
    r.height = a.at("height").u64(0, kMaxArrayHeight);
    r.depth = a.at("depth").u64(0, kMaxArrayDepth);
    r.format = *array_format_from_name(format_name(a.at("format")));
    r.channels = channels(a.at("channels"));
    const JsonField flags = a.at("flags");
    r.flags = flags.u32();
    if (r.flags & ~kReplayableArrayFlags)
      flags.fail(fmt::format("holds array flags kerncap does not re-create ({:#x})", r.flags & ~kReplayableArrayFlags));
    r.levels = a.at("levels").u32(0, kMaxArrayLevels);
    t.arrays.push_back(r);
  }
  const JsonField objects = f.at("objects");
  for (size_t i = 0, n = objects.array_size(kMaxTextureObjects); i < n; ++i) {
    const JsonField o = objects.elem(i);
    TexObjectRecord r;
    r.id = o.at("id").u32();
    r.handle = o.at("handle").hex();
    const JsonField kind = o.at("kind");
    const std::string k = kind.str(16);
    if (k != "texture" && k != "surface") kind.fail(fmt::format("is '{}', not texture or surface", k));
    r.surface = k == "surface";
    const JsonField res = o.at("resource");
    r.resource = resource_type(res.at("type"));
    if (r.resource == ResourceType::Array || r.resource == ResourceType::MipmappedArray) {
      r.array = res.at("array").u32();
    } else {
      r.address = res.at("address").hex();
      r.format = *array_format_from_name(format_name(res.at("format")));
      r.channels = channels(res.at("channels"));
      if (r.resource == ResourceType::Linear) {
        r.size = res.at("size").u64(1, kMaxArrayBytes);
      } else {
        r.width = res.at("width").u64(1, kMaxArrayWidth);
        r.height = res.at("height").u64(1, kMaxArrayHeight);
        r.pitch = res.at("pitch").u64(1, uint64_t{1} << 32);
      }
    }
    if (const auto tex = o.find("texture")) r.texture = read_texture(*tex);
    if (const auto view = o.find("view")) r.view = read_view(*view);
    t.objects.push_back(r);
  }
  const JsonField handles = f.at("handles");
  for (size_t i = 0, n = handles.array_size(kMaxTextureObjects); i < n; ++i) {
    const JsonField h = handles.elem(i);
    if (h.array_size() != 2) h.fail(fmt::format("has {} elements, expected [offset, object]", h.array_size()));
    t.handles.push_back({h.elem(0).u32(), h.elem(1).u32()});
  }
  return t;
}

}  // namespace kerncap::format
