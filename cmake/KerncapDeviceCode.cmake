# kerncap_embed_device_code(<target> SOURCE <file.cu> HEADER <dir/x_image.hpp> NAMESPACE <ns>
#     FUNCTION <name> ARCHS <sm list> [PTX] [FLAGS <nvcc flags>...] [DEPENDS <files>...] [COMMENT <text>])
# Compiles kerncap's own device code with nvcc into a fatbin (SASS for each architecture, plus
# PTX of the last one with PTX, for GPUs after it) and embeds it into <target> as
# `std::span<const unsigned char> <ns>::<name>()` (declared in HEADER), so nothing is looked
# up on disk at run time. Used by the footprint patch and the snapshot's device scan.
function(kerncap_embed_device_code target)
  cmake_parse_arguments(A "PTX" "SOURCE;HEADER;NAMESPACE;FUNCTION;COMMENT" "ARCHS;FLAGS;DEPENDS" ${ARGN})
  get_filename_component(_stem ${A_SOURCE} NAME_WE)
  set(_fatbin ${CMAKE_CURRENT_BINARY_DIR}/${_stem}.fatbin)
  string(REGEX REPLACE "\\.hpp$" ".cpp" _cpp_rel ${A_HEADER})
  set(_cpp ${CMAKE_CURRENT_BINARY_DIR}/generated/${_cpp_rel})
  set(_gencode)
  foreach(_arch IN LISTS A_ARCHS)
    list(APPEND _gencode -gencode arch=compute_${_arch},code=sm_${_arch})
    set(_last ${_arch})
  endforeach()
  if(A_PTX)
    list(APPEND _gencode -gencode arch=compute_${_last},code=compute_${_last})
  endif()
  file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${A_SOURCE})
  add_custom_command(
    OUTPUT ${_fatbin}
    COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} --fatbin ${A_FLAGS} ${_gencode} ${A_SOURCE} -o ${_fatbin}
    DEPENDS ${A_SOURCE} ${A_DEPENDS}
    COMMENT "${A_COMMENT}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${_cpp}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${_fatbin} -DOUTPUT=${_cpp} -DHEADER=${A_HEADER} -DNAMESPACE=${A_NAMESPACE}
            -DFUNCTION=${A_FUNCTION} -DSOURCE=${_rel} -P ${PROJECT_SOURCE_DIR}/cmake/embed_fatbin.cmake
    DEPENDS ${_fatbin} ${PROJECT_SOURCE_DIR}/cmake/embed_fatbin.cmake
    VERBATIM)
  target_sources(${target} PRIVATE ${_cpp})
endfunction()
