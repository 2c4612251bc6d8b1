# Embeds the compiled device patch (a fatbin) into a C++ source file, so kerncap finds it
# without any file lookup at run time. Run as:
#   cmake -DINPUT=<patch.fatbin> -DOUTPUT=<patch_image.cpp> -P embed_patch.cmake
file(READ "${INPUT}" _hex HEX)
string(LENGTH "${_hex}" _len)
math(EXPR _bytes "${_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _body "${_hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n  " _body "${_body}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from src/footprint/patch.cu by embed_patch.cmake: do not edit.\n"
  "#include \"footprint/patch_image.hpp\"\n\n"
  "namespace kerncap::footprint {\n"
  "namespace {\n"
  "// Fatbins are read in place by the driver: keep the image aligned like a loaded file.\n"
  "alignas(64) const unsigned char kImage[${_bytes}] = {\n  ${_body}\n};\n"
  "}  // namespace\n\n"
  "std::span<const unsigned char> patch_image() { return {kImage, sizeof kImage}; }\n\n"
  "}  // namespace kerncap::footprint\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
