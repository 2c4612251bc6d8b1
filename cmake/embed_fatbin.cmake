# Embeds a compiled device image (a fatbin) into a C++ source file, so kerncap finds it
# without any file lookup at run time. Run as:
#   cmake -DINPUT=<x.fatbin> -DOUTPUT=<x_image.cpp> -DHEADER=<dir/x_image.hpp>
#         -DNAMESPACE=<kerncap::x> -DFUNCTION=<name> -DSOURCE=<what it was compiled from>
#         -P embed_fatbin.cmake
# The header declares `std::span<const unsigned char> FUNCTION();` in NAMESPACE.
file(READ "${INPUT}" _hex HEX)
string(LENGTH "${_hex}" _len)
math(EXPR _bytes "${_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _body "${_hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n  " _body "${_body}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${SOURCE} by cmake/embed_fatbin.cmake: do not edit.\n"
  "#include \"${HEADER}\"\n\n"
  "namespace ${NAMESPACE} {\n"
  "namespace {\n"
  "// Fatbins are read in place by the driver: keep the image aligned like a loaded file.\n"
  "alignas(64) const unsigned char kImage[${_bytes}] = {\n  ${_body}\n};\n"
  "}  // namespace\n\n"
  "std::span<const unsigned char> ${FUNCTION}() { return {kImage, sizeof kImage}; }\n\n"
  "}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
