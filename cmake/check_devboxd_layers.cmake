# check_devboxd_layers.cmake: devboxd's includes and calls point down its
# layers (docs/design.md, "devboxd in layers").
#
#   util.c < runtime < store < images < builder < engine < rest < net < main.c
#
# One folder per layer (util.c/util.h at the top of devboxd/ are the base,
# main.c wires the layers together).  agent/ and ptyd/ are programs run
# inside a devbox: the base's peers (the runtime includes the agent's
# protocol header).  A file may include a header of its own folder or of a
# lower layer, and call a function (or use a variable) defined in its own
# folder or a lower layer; layers of equal rank are side by side and use
# nothing of each other.  Since every edge points down, no two layers form
# a cycle.  Where a lower layer needs something of a higher one, the higher
# one hands it a callback (builder/ reads blueprint records and opens a build
# context's storage object through callbacks the engine sets).
#
#   cmake -DROOT=<devboxd dir> [-DOBJECTS=<a.o|b.o|...> -DNM=<nm>]
#         -P cmake/check_devboxd_layers.cmake
#
# Includes are read from the sources under ROOT.  Calls are read from the
# built objects (OBJECTS, "|"-separated, e.g. $<TARGET_OBJECTS:devboxd_core>
# and main.c's): what each one leaves undefined and another defines, by
# nm.  An object is mapped to its source by its path (<folder>/<file>.c.o).
#
# With the objects it also checks names: a file exports only names that
# start with its own ("<file>_") or a module prefix NAMES lists for it.
#
# Fails naming each file and what it includes, calls or exports.  ALLOWED
# lists edges that cannot point down, "<from> -> <to>: <reason>" one a line
# (none now); a new edge fails, and so does an entry no longer needed.

cmake_minimum_required(VERSION 3.16)

if(NOT ROOT)
    message(FATAL_ERROR "usage: cmake -DROOT=<devboxd dir> [-DOBJECTS=<a.o|b.o> -DNM=<nm>] "
                        "-P check_devboxd_layers.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

# Folders lowest first and their ranks: equal ranks are side by side.
# "base" is util.c and util.h, "app" is main.c and config.c (the settings
# main.c reads once and hands to each layer).
set(LAYERS base agent ptyd runtime store images builder engine rest net app)
set(RANKS 0 0 0 1 2 3 4 5 6 7 8)
set(FOLDERS agent ptyd runtime store images builder engine rest net)

# Why runtime < store and not the other way: the layer store records a
# layer's owner as the runtime's uid range (sandbox_dir_owner,
# sandbox_shift_uid) and copies layers with the runtime's helper
# (sandbox_spawn), while the runtime gets lower dirs as plain paths and
# calls nothing of the store.
#
# Edges that cannot point down, each with its reason: none.
set(ALLOWED)

# Module prefixes a file may export beside its own name, "<file>: <prefix>
# [<prefix>...]: <reason>" one a line.
set(NAMES
    "config.c: devboxd_config_: the settings of the devboxd program (config.h)"
    "engine/devboxes.c: engine_ dbx_ exec_: the engine's API (engine.h) and its records' status names"
    "engine/executions.c: engine_: the engine's API (engine.h)"
    "engine/blueprint_builds.c: blueprints_: the blueprints, as their routes name them"
    "engine/disk_snapshots.c: snapshots_: the disk snapshots, as their routes name them"
    "engine/pty_sessions.c: pty_engine_: the engine side of PTY sessions (ptyd/ is the other)"
    "engine/tunnels.c: tunnel_: a devbox's tunnel"
    "net/h2c.c: h2_: the HTTP/2 transport"
    "net/http_server.c: http_: the front ends' shared helpers (http_internal.h) and the request model's clear and parse"
    "net/tunnel_proxy.c: tunnel_: the tunnel listener (tunnel_server_) and its host and path parsing"
    "rest/api_files.c: files_: the devbox file routes"
    "rest/api_objects.c: objects_signed_request: the key check (api.c) asks whether a request carries an object URL's signature"
    "rest/api_tunnels.c: api_: the tunnel and SSH key routes"
    "runtime/sandbox_exec.c: sandbox_: the runtime's API (sandbox.h) for commands, files and ports")

# ---------------------------------------------------------------- helpers

# The layer of a path relative to ROOT ("engine/devboxes.c", "util.h").
function(layer_of path out)
    if(path MATCHES "^([^/]+)/")
        set(folder ${CMAKE_MATCH_1})
        if(folder IN_LIST FOLDERS)
            set(${out} ${folder} PARENT_SCOPE)
        else()
            set(${out} "" PARENT_SCOPE)
        endif()
    elseif(path MATCHES "^(main\\.c|config\\.[ch])$")
        set(${out} app PARENT_SCOPE)
    else()
        set(${out} base PARENT_SCOPE)
    endif()
endfunction()

function(rank_of layer out)
    list(FIND LAYERS ${layer} i)
    list(GET RANKS ${i} r)
    set(${out} ${r} PARENT_SCOPE)
endfunction()

# Sets why (in the caller) when an edge from layer a to layer b points up
# or sideways, else clears it.
macro(edge_check a b)
    set(why)
    if(NOT "${a}" STREQUAL "${b}")
        rank_of(${a} ra)
        rank_of(${b} rb)
        if(rb GREATER ra)
            set(why "${b}/ is above ${a}/")
        elseif(rb EQUAL ra)
            set(why "${b}/ and ${a}/ are side by side")
        endif()
    endif()
    string(REPLACE "base/" "util.c" why "${why}")
    string(REPLACE "app/" "main.c" why "${why}")
endmacro()

set(allowed_keys)
foreach(entry IN LISTS ALLOWED)
    if(NOT entry MATCHES "^([^ ]+ -> [^:]+): .+$")
        message(FATAL_ERROR "check_devboxd_layers: bad ALLOWED entry \"${entry}\" "
                            "(write \"<from> -> <to>: <reason>\")")
    endif()
    list(APPEND allowed_keys "${CMAKE_MATCH_1}")
endforeach()
set(used_keys)
set(bad)

# --------------------------------------------------------------- includes

file(GLOB sources RELATIVE ${ROOT} ${ROOT}/*.c ${ROOT}/*.h)
foreach(folder IN LISTS FOLDERS)
    file(GLOB more RELATIVE ${ROOT} ${ROOT}/${folder}/*.c ${ROOT}/${folder}/*.h)
    list(APPEND sources ${more})
endforeach()

# Where each header is, by its name: "h_<name>" holds its path.
foreach(src IN LISTS sources)
    if(src MATCHES "\\.h$")
        get_filename_component(name ${src} NAME)
        if(DEFINED h_${name})
            message(FATAL_ERROR "check_devboxd_layers: two headers named ${name}: "
                                "${h_${name}} and ${src} (one name, one header)")
        endif()
        set(h_${name} ${src})
    endif()
endforeach()

foreach(src IN LISTS sources)
    layer_of(${src} from)
    file(STRINGS ${ROOT}/${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line IN LISTS includes)
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" inc "${line}")
        get_filename_component(name ${inc} NAME)
        set(to_path)
        if(inc MATCHES "^([^/]+)/" AND CMAKE_MATCH_1 IN_LIST FOLDERS)
            set(to_path ${inc})
        elseif(DEFINED h_${name})
            set(to_path ${h_${name}})
        else()
            continue() # system, cJSON, generated
        endif()
        layer_of(${to_path} to)
        edge_check(${from} ${to})
        if(why)
            if("${src} -> ${to_path}" IN_LIST allowed_keys)
                list(APPEND used_keys "${src} -> ${to_path}")
            else()
                list(APPEND bad "${src} includes \"${inc}\" (${why})")
            endif()
        endif()
    endforeach()
endforeach()

# ------------------------------------------------------------------ calls

set(checked_calls OFF)
if(OBJECTS)
    if(NOT NM)
        set(NM nm)
    endif()
    string(REPLACE "|" ";" objects "${OBJECTS}")
    list(FILTER objects EXCLUDE REGEX "^$")
    foreach(obj IN LISTS objects)
        if(NOT EXISTS "${obj}")
            message(FATAL_ERROR "check_devboxd_layers: no object ${obj}: build devboxd first")
        endif()
    endforeach()
    # -A: each line starts with its object's path, even for one object.
    execute_process(COMMAND ${NM} -g -A ${objects}
                    OUTPUT_VARIABLE nm_out ERROR_VARIABLE nm_err RESULT_VARIABLE nm_rc)
    if(NOT nm_rc EQUAL 0)
        message(FATAL_ERROR "check_devboxd_layers: ${NM} failed: ${nm_err}")
    endif()
    # One line each; ';' cannot occur in nm's output of C objects.
    string(REPLACE "\n" ";" nm_lines "${nm_out}")

    # The source of each object by its path: "<folder>/<file>.c" or
    # "<file>.c" (CMake names an object <source path>.o).
    set(srcs)
    foreach(obj IN LISTS objects)
        get_filename_component(file ${obj} NAME)
        string(REGEX REPLACE "\\.o$" "" file "${file}")
        get_filename_component(dir ${obj} DIRECTORY)
        get_filename_component(dir ${dir} NAME)
        string(MAKE_C_IDENTIFIER "${obj}" key)
        if(dir IN_LIST FOLDERS)
            set(src_of_${key} "${dir}/${file}")
        else()
            set(src_of_${key} "${file}")
        endif()
        list(APPEND srcs ${src_of_${key}})
    endforeach()
    foreach(line IN LISTS nm_lines)
        if(line MATCHES "^(.+\\.o): +U ([^ ]+)$")
            set(sym ${CMAKE_MATCH_2})
            string(MAKE_C_IDENTIFIER "${CMAKE_MATCH_1}" key)
            set(cur ${src_of_${key}})
            list(APPEND u_${cur} ${sym})
        elseif(line MATCHES "^(.+\\.o): *[0-9a-fA-F]+ [A-TV-Z] ([^ ]+)$")
            set(sym ${CMAKE_MATCH_2})
            string(MAKE_C_IDENTIFIER "${CMAKE_MATCH_1}" key)
            set(cur ${src_of_${key}})
            set(d_${sym} ${cur})
            list(APPEND defs_${cur} ${sym})
        endif()
    endforeach()
    if(NOT DEFINED cur)
        message(FATAL_ERROR "check_devboxd_layers: ${NM} listed no symbols of ${OBJECTS}")
    endif()

    foreach(src IN LISTS srcs)
        layer_of(${src} from)
        set(targets)
        foreach(sym IN LISTS u_${src})
            if(NOT DEFINED d_${sym})
                continue() # libc and the libraries
            endif()
            set(def ${d_${sym}})
            layer_of(${def} to)
            edge_check(${from} ${to})
            if(why)
                string(MAKE_C_IDENTIFIER "${def}" key)
                if(NOT def IN_LIST targets)
                    list(APPEND targets ${def})
                    set(why_${key} "${why}")
                    set(syms_${key})
                endif()
                list(APPEND syms_${key} ${sym})
            endif()
        endforeach()
        foreach(def IN LISTS targets)
            string(MAKE_C_IDENTIFIER "${def}" key)
            if("${src} -> ${def}" IN_LIST allowed_keys)
                list(APPEND used_keys "${src} -> ${def}")
            else()
                list(JOIN syms_${key} ", " names)
                list(APPEND bad "${src} calls ${def} (${names}: ${why_${key}})")
            endif()
        endforeach()
    endforeach()

    # Names: what a file exports starts with its name ("<file>_"), or with
    # the module prefix NAMES lists for it.
    foreach(src IN LISTS srcs)
        get_filename_component(stem ${src} NAME_WE)
        set(prefixes "${stem}_")
        foreach(entry IN LISTS NAMES)
            if(entry MATCHES "^([^:]+): ([^:]+): .+$" AND CMAKE_MATCH_1 STREQUAL src)
                string(REPLACE " " ";" more "${CMAKE_MATCH_2}")
                list(APPEND prefixes ${more})
            endif()
        endforeach()
        set(odd)
        foreach(sym IN LISTS defs_${src})
            set(ok OFF)
            # Names the compiler makes (a reserved "__" start, e.g. the
            # ODR indicators of an AddressSanitizer build) are not ours.
            if(sym STREQUAL stem OR sym MATCHES "^__")
                set(ok ON)
            endif()
            foreach(prefix IN LISTS prefixes)
                string(FIND "${sym}" "${prefix}" at)
                if(at EQUAL 0)
                    set(ok ON)
                endif()
            endforeach()
            if(NOT ok)
                list(APPEND odd ${sym})
            endif()
        endforeach()
        if(odd)
            list(JOIN odd ", " names)
            list(JOIN prefixes " or " want)
            list(APPEND bad "${src} exports ${names} (name it ${want}...)")
        endif()
    endforeach()
    set(checked_calls ON)
endif()

# An entry no longer needed goes: the list only shrinks.  Call entries are
# judged only when the objects were read, entries of a file not in this
# tree not at all.
foreach(key IN LISTS allowed_keys)
    if(key IN_LIST used_keys)
        continue()
    endif()
    string(REGEX REPLACE " -> .*$" "" from "${key}")
    if(NOT EXISTS ${ROOT}/${from})
        continue()
    endif()
    if(key MATCHES "\\.c$" AND NOT checked_calls)
        continue()
    endif()
    list(APPEND bad "ALLOWED lists \"${key}\", which no longer occurs: remove it")
endforeach()

if(bad)
    list(JOIN bad "\n  " text)
    message(FATAL_ERROR "devboxd layers: a file includes or calls only its own folder and the "
                        "layers below it (util.c < runtime < store < images < builder < engine < "
                        "rest < net < main.c): move the code to the right layer, or pass a "
                        "callback from main.c; and what it exports starts with its name:\n  ${text}")
endif()
list(LENGTH allowed_keys n_allowed)
if(checked_calls)
    message(STATUS "devboxd layers: includes and calls point down (${n_allowed} edges allowed), "
                   "exported names start with their file's")
else()
    message(STATUS "devboxd layers: includes point down (${n_allowed} edges allowed; "
                   "calls not checked: no OBJECTS)")
endif()
