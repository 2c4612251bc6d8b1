# Embeds the reproducer's template files into a header at build time, so the installed
# kerncap binary needs no data directory. Run as:
#   cmake -DOUTPUT=<header> -DINPUTS="<a.in>;<b.in>" -P embed_templates.cmake
# Each file becomes `inline constexpr std::string_view k_<name>` where <name> is the file
# name without ".in", non-identifier characters as '_' (Makefile.in -> k_Makefile).
set(_text "#pragma once\n// Generated from src/reproducer/templates/ by embed_templates.cmake: do not edit.\n")
string(APPEND _text "#include <string_view>\n\nnamespace kerncap::reproducer::templates {\n\n")
foreach(_in IN LISTS INPUTS)
  get_filename_component(_name "${_in}" NAME)
  string(REGEX REPLACE "\\.in$" "" _name "${_name}")
  string(MAKE_C_IDENTIFIER "${_name}" _id)
  file(READ "${_in}" _content)
  string(FIND "${_content}" ")kc_tmpl\"" _clash)
  if(NOT _clash EQUAL -1)
    message(FATAL_ERROR "${_in} contains the raw-string delimiter )kc_tmpl\"")
  endif()
  string(APPEND _text "inline constexpr std::string_view k_${_id} = R\"kc_tmpl(${_content})kc_tmpl\";\n\n")
endforeach()
string(APPEND _text "}  // namespace kerncap::reproducer::templates\n")
file(WRITE "${OUTPUT}.tmp" "${_text}")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
