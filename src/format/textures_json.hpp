#pragma once
// The manifest's "textures" section (format version 4): writing, and the strict reading of
// each field (types and ranges; the rules between fields are check_textures's).
#include <nlohmann/json.hpp>

#include "format/strict_json.hpp"
#include "format/textures.hpp"

namespace kerncap::format {

struct Manifest;

nlohmann::json textures_to_json(const Textures& t);
Textures textures_from_json(const JsonField& f);
// Between fields: arrays' regions exist, are of kind array and hold exactly the array's
// bytes; objects refer to arrays that exist and to memory inside a captured region; handle
// slots lie inside the parameter bytes, 8-byte aligned, apart. Throws Error(Input).
void check_textures(const Manifest& m);

}  // namespace kerncap::format
