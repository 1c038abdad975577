# check_host_layers.cmake: the host's includes point down its layers
# (docs/design.md, "The host's layers").
#
#   base < backend, tools < protocol < transport < app
#
# A file may include a header of its own folder or of a lower layer;
# backend/ and tools/ are side by side and include nothing of each other.
# transport/ sees the protocol only through its public headers (PUBLIC
# below): the dispatcher's internals stay in protocol/.  mcp_internal.h,
# which the dispatcher's files share, is included only by those listed in
# INTERNAL (a new one fails; the list is meant to shrink).
#
#   cmake -DROOT=<host dir> -P cmake/check_host_layers.cmake
#
# Fails naming each file and the header it includes.  ALLOWED lists the
# includes still to move, each with its reason; a new one fails.
#
# It also fails when a file in transport/ spells an MCP method name as a
# string literal ("initialize", "tools/call", "notifications/...") or a
# JSON-RPC error code (a -32xxx constant of a protocol/ header, or the
# number): the protocol layer decides those (protocol/intake.h).
# WIRE_ALLOWED lists exceptions, each with its reason.

cmake_minimum_required(VERSION 3.16)

if(NOT ROOT)
    message(FATAL_ERROR "usage: cmake -DROOT=<host dir> -P check_host_layers.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

set(LAYERS base backend tools protocol transport app)
# Rank of each layer, same order as LAYERS: equal ranks are peers.
set(RANKS 0 1 1 2 3 4)

# What the transports and the program may use of the protocol.
set(PUBLIC mcp.h intake.h)

# The files that read the dispatcher's or a session's fields: mcp.c, and
# listen.c and resources.c (a session's notify sink and subscriptions). A
# call's state is call_state.h's, what a request calls back into mcp.c
# (a session's pending client requests among them) dispatch.h's.
set(INTERNAL protocol/mcp.c protocol/listen.c protocol/resources.c)

# Includes still to move, "file:header", each with its reason above it.
# None today.
set(ALLOWED)

# Which layer each header is in.
set(header_layer)
foreach(layer IN LISTS LAYERS)
    file(GLOB headers RELATIVE ${ROOT}/${layer} ${ROOT}/${layer}/*.h)
    foreach(h IN LISTS headers)
        list(APPEND header_layer "${h}=${layer}")
    endforeach()
endforeach()

set(bad)
foreach(layer IN LISTS LAYERS)
    list(FIND LAYERS ${layer} i)
    list(GET RANKS ${i} rank)
    file(GLOB sources RELATIVE ${ROOT} ${ROOT}/${layer}/*.c ${ROOT}/${layer}/*.h)
    foreach(src IN LISTS sources)
        file(STRINGS ${ROOT}/${src} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
        foreach(line IN LISTS includes)
            string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" inc "${line}")
            get_filename_component(base ${inc} NAME)
            set(to)
            foreach(pair IN LISTS header_layer)
                if(pair MATCHES "^(.*)=(.*)$" AND CMAKE_MATCH_1 STREQUAL base)
                    set(to ${CMAKE_MATCH_2})
                endif()
            endforeach()
            if(NOT to)
                continue() # sdk/include, system, generated
            endif()
            list(FIND LAYERS ${to} j)
            list(GET RANKS ${j} to_rank)
            set(why)
            if(base STREQUAL "mcp_internal.h" AND NOT src IN_LIST INTERNAL
               AND NOT src STREQUAL "protocol/mcp_internal.h")
                set(why "the dispatcher's internals (list it in INTERNAL only if it is part of the dispatcher)")
            elseif(to STREQUAL layer)
                continue()
            elseif(to_rank GREATER rank)
                set(why "${to}/ is above ${layer}/")
            elseif(to_rank EQUAL rank)
                set(why "${to}/ and ${layer}/ are side by side")
            elseif(layer STREQUAL "transport" AND to STREQUAL "protocol"
                   AND NOT base IN_LIST PUBLIC)
                list(JOIN PUBLIC ", " public_text)
                set(why "a transport uses the protocol through ${public_text}")
            endif()
            if(why AND NOT "${src}:${base}" IN_LIST ALLOWED)
                list(APPEND bad "${src} includes \"${inc}\": ${why}")
            endif()
        endforeach()
    endforeach()
endforeach()

# A transport moves bytes: which method a message is and which JSON-RPC
# error answers it are the protocol's (protocol/intake.h). Files in
# transport/ spell no MCP method name as a string literal and no JSON-RPC
# error code (a constant #defined as -32xxx in a protocol/ header, or the
# number itself).
set(METHOD_RE "\"(initialize|ping|(notifications|tasks|tools|resources|prompts|completion|logging|subscriptions|sampling|elicitation|roots)/[A-Za-z_/]*)\"")
set(CODE_RE "-32[0-9][0-9][0-9]")

# Exceptions, "file:token", each with its reason above it. None today.
set(WIRE_ALLOWED)

set(codes)
file(GLOB protocol_headers ${ROOT}/protocol/*.h)
foreach(h IN LISTS protocol_headers)
    file(STRINGS ${h} defines REGEX "^#define [A-Z0-9_]+ \\(?${CODE_RE}")
    foreach(line IN LISTS defines)
        string(REGEX REPLACE "^#define ([A-Z0-9_]+) .*$" "\\1" name "${line}")
        list(APPEND codes ${name})
    endforeach()
endforeach()

list(JOIN codes "|" codes_alt)
set(NAME_RE "(^|[^A-Za-z0-9_])(${codes_alt})([^A-Za-z0-9_]|$)")

file(GLOB transport_files RELATIVE ${ROOT} ${ROOT}/transport/*.c ${ROOT}/transport/*.h)
foreach(src IN LISTS transport_files)
    # Most files spell none: one look at the whole file first.
    file(READ ${ROOT}/${src} whole)
    set(any)
    string(REGEX MATCH "${METHOD_RE}" hit "${whole}")
    list(APPEND any ${hit})
    string(REGEX MATCH "${CODE_RE}" hit "${whole}")
    list(APPEND any ${hit})
    if(codes)
        string(REGEX MATCH "${NAME_RE}" hit "${whole}")
        list(APPEND any ${hit})
    endif()
    if(NOT any)
        continue()
    endif()
    file(STRINGS ${ROOT}/${src} lines)
    set(lineno 0)
    foreach(line IN LISTS lines)
        math(EXPR lineno "${lineno} + 1")
        set(found)
        string(REGEX MATCHALL "${METHOD_RE}" methods "${line}")
        foreach(m IN LISTS methods)
            string(REPLACE "\"" "" m "${m}")
            list(APPEND found "method name \"${m}\"")
        endforeach()
        string(REGEX MATCHALL "${CODE_RE}" numbers "${line}")
        foreach(n IN LISTS numbers)
            list(APPEND found "error code ${n}")
        endforeach()
        if(codes)
            string(REGEX MATCHALL "${NAME_RE}" names "${line}")
            foreach(n IN LISTS names)
                string(REGEX REPLACE "${NAME_RE}" "\\2" n "${n}")
                list(APPEND found "error code ${n}")
            endforeach()
        endif()
        foreach(f IN LISTS found)
            string(REGEX REPLACE "^(method name|error code) " "" token "${f}")
            string(REPLACE "\"" "" token "${token}")
            if(NOT "${src}:${token}" IN_LIST WIRE_ALLOWED)
                list(APPEND bad "${src}:${lineno} spells the ${f}: the protocol decides that (protocol/intake.h)")
            endif()
        endforeach()
    endforeach()
endforeach()

if(bad)
    list(JOIN bad "\n  " text)
    message(FATAL_ERROR "host layers: an include points up or sideways, or a "
                        "transport spells the protocol (move the code to the layer "
                        "that owns it, or pass a callback from above):\n  ${text}")
endif()
if(ALLOWED)
    list(JOIN ALLOWED ", " allowed_text)
    message(STATUS "host layers: includes point down (allowed for now: ${allowed_text})")
else()
    message(STATUS "host layers: includes point down")
endif()
