# check_devboxd_layers.cmake: devboxd's lower layers never include a header
# of a higher one.  engine/, build/, images/, store/ and runtime/ must not
# include a header of net/ (the network front ends) or of rest/ (the
# request model rest/http.h, routes and handlers): the engine answers plain calls and knows no HTTP.
#
#   cmake -DROOT=<devboxd dir> -P cmake/check_devboxd_layers.cmake
#
# Fails naming each file and the header it includes.  ALLOWED lists the
# includes still to move up, each with its reason; a new one fails.

cmake_minimum_required(VERSION 3.16)

if(NOT ROOT)
    message(FATAL_ERROR "usage: cmake -DROOT=<devboxd dir> -P check_devboxd_layers.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

# engine/objects.c still routes the /v1/objects requests itself (its
# handlers, upload bodies and signed download URLs are HTTP).
set(ALLOWED
    "engine/objects.c:api.h"
    "engine/objects.h:http.h")

set(upper)
foreach(layer net rest)
    file(GLOB headers RELATIVE ${ROOT}/${layer} ${ROOT}/${layer}/*.h)
    list(APPEND upper ${headers})
endforeach()

set(bad)
foreach(layer engine build images store runtime)
    file(GLOB sources RELATIVE ${ROOT} ${ROOT}/${layer}/*.c ${ROOT}/${layer}/*.h)
    foreach(src IN LISTS sources)
        file(STRINGS ${ROOT}/${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
        foreach(line IN LISTS includes)
            string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" inc "${line}")
            get_filename_component(base ${inc} NAME)
            if(inc MATCHES "^(net|rest)/" OR base IN_LIST upper)
                if(NOT "${src}:${base}" IN_LIST ALLOWED)
                    list(APPEND bad "${src} includes \"${inc}\"")
                endif()
            endif()
        endforeach()
    endforeach()
endforeach()

# The layer store is a leaf of the engine: store/layers.c and layers.h
# include no engine header (records, devboxes and blueprints register
# with it from above).
file(GLOB engine_headers RELATIVE ${ROOT}/engine ${ROOT}/engine/*.h)
foreach(src store/layers.c store/layers.h)
    if(EXISTS ${ROOT}/${src})
        file(STRINGS ${ROOT}/${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
        foreach(line IN LISTS includes)
            string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" inc "${line}")
            get_filename_component(base ${inc} NAME)
            if(base IN_LIST engine_headers)
                list(APPEND bad "${src} includes \"${inc}\" (the layer store is a leaf)")
            endif()
        endforeach()
    endif()
endforeach()

if(bad)
    list(JOIN bad "\n  " text)
    message(FATAL_ERROR "devboxd layers: engine/ and the layers below it must not include net/ or rest/ headers "
                        "(move the HTTP part to rest/, or pass a callback from main.c), nor the "
                        "layer store another engine header (register a kind or owner with it "
                        "instead):\n  ${text}")
endif()
message(STATUS "devboxd layers: engine/ and the layers below it include no net/ or rest/ header "
               "(allowed for now: ${ALLOWED})")
