# nlohmann_json for the Emscripten build. Debian's own config points at /usr/include,
# and that whole folder on the include path shadows the Emscripten sysroot's libc++
# headers; so this config gives nlohmann_json an include folder of its own holding
# only nlohmann/ (a copy of Debian's headers, made at configure time).
if(TARGET nlohmann_json::nlohmann_json)
  return()
endif()
set(_mtir_json_src /usr/include/nlohmann)
if(NOT EXISTS ${_mtir_json_src}/json.hpp)
  message(FATAL_ERROR "nlohmann_json headers not found in ${_mtir_json_src}: install nlohmann-json3-dev")
endif()
set(_mtir_json_inc ${CMAKE_BINARY_DIR}/nlohmann_json_include)
file(COPY ${_mtir_json_src} DESTINATION ${_mtir_json_inc})
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${_mtir_json_inc})
set(nlohmann_json_FOUND TRUE)
