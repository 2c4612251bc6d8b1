# Precompiled headers for targets whose translation units all parse the same heavy
# third-party headers. Measured on the 2-core CI machine (g++ 12), parsing alone costs per
# file: CLI11 8.2 s, nlohmann/json 2.8 s, GoogleTest 1.9 s, <filesystem> 1.2 s; our files are
# small, so one precompiled header per target saves most of a clean build's parsing.
# Default: on for clean builds (CI, `pip install .`), off under a compiler launcher such as
# ccache, which cannot cache a file compiled with a precompiled header ("could not use
# precompiled header" in `ccache -s -v`): there a cache hit is worth more.
# Never for the sources of libkerncap.so (the injected library): a forced include could add
# static initialisers to the application's process.
if(CMAKE_CXX_COMPILER_LAUNCHER)
  set(_kerncap_pch_default OFF)
else()
  set(_kerncap_pch_default ON)
endif()
option(KERNCAP_PCH "Precompile the heavy third-party headers of the kerncap executable and the unit tests"
       ${_kerncap_pch_default})

# kerncap_pch(TARGET HEADER...): HEADER as for target_precompile_headers (<name> or "file").
# C++ sources only (a target may hold C or CUDA files next to them).
function(kerncap_pch target)
  if(NOT KERNCAP_PCH)
    return()
  endif()
  set(_headers)
  foreach(h IN LISTS ARGN)
    list(APPEND _headers "$<$<COMPILE_LANGUAGE:CXX>:${h}>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${_headers})
endfunction()

# kerncap_pch_shared(TARGET HEADER...): like kerncap_pch, but every target given the same
# HEADER list shares the first one's precompiled header (REUSE_FROM): the unit-test binaries
# compile with the same flags, so one header serves them all instead of one build per binary
# (about 10 s of CPU each). GCC refuses a header built with other code-generation flags, and
# -Winvalid-pch with -Werror turns that into a build error, so a mismatch cannot go unnoticed.
function(kerncap_pch_shared target)
  if(NOT KERNCAP_PCH)
    return()
  endif()
  string(SHA1 _key "${ARGN}")
  get_property(_donor GLOBAL PROPERTY KERNCAP_PCH_DONOR_${_key})
  if(_donor)
    target_precompile_headers(${target} REUSE_FROM ${_donor})
  else()
    kerncap_pch(${target} ${ARGN})
    set_property(GLOBAL PROPERTY KERNCAP_PCH_DONOR_${_key} ${target})
  endif()
endfunction()
