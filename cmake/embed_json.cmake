# rlmcp_embed_json(TARGET [DIR dir]): the tool schemas of the current
# plugin, dir/*.json (default schemas/), checked at build time and compiled
# into TARGET. rlmcp_add_plugin and rlmcp_plugin_test call it for every
# plugin that has a schemas/ directory.
#
# Each file is one schema: <tool>.json for an inputSchema, <tool>.out.json
# for an outputSchema. rlmcp-embed-json (sdk/tools/embed_json.c) checks it
# as the host will at registration -- strict JSON, an object, no key twice,
# a JSON Schema the host's validator accepts -- so a mistake fails the build
# with file:line:column, and writes it compacted into a generated C source
# as `const char schema_<stem>[]` ('.' and '-' become '_'), declared in the
# generated "schemas.h" that TARGET can include.
function(rlmcp_embed_json target)
    cmake_parse_arguments(PARSE_ARGV 1 _ej "" "DIR" "")
    if(NOT _ej_DIR)
        set(_ej_DIR schemas)
    endif()
    set(_c ${CMAKE_CURRENT_BINARY_DIR}/schemas.c)
    set(_h ${CMAKE_CURRENT_BINARY_DIR}/schemas.h)
    # One generating target per directory: the plugin and its test share
    # the outputs, which must not be written by two builds at once.
    get_property(_gen DIRECTORY PROPERTY RLMCP_EMBED_JSON_TARGET)
    if(NOT _gen)
        file(GLOB _files CONFIGURE_DEPENDS
             ${CMAKE_CURRENT_SOURCE_DIR}/${_ej_DIR}/*.json)
        list(SORT _files)
        if(NOT _files)
            message(FATAL_ERROR "rlmcp_embed_json: no .json file in "
                                "${CMAKE_CURRENT_SOURCE_DIR}/${_ej_DIR}")
        endif()
        add_custom_command(
            OUTPUT ${_c} ${_h}
            COMMAND rlmcp-embed-json ${_c} ${_h} ${_files}
            DEPENDS rlmcp-embed-json ${_files}
            COMMENT "Checking and embedding ${CMAKE_CURRENT_SOURCE_DIR}/${_ej_DIR}/*.json"
            VERBATIM)
        set(_gen ${target}_schemas)
        add_custom_target(${_gen} DEPENDS ${_c} ${_h})
        set_property(DIRECTORY PROPERTY RLMCP_EMBED_JSON_TARGET ${_gen})
    endif()
    target_sources(${target} PRIVATE ${_c})
    target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
    add_dependencies(${target} ${_gen})
endfunction()
