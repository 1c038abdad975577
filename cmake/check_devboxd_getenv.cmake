# check_devboxd_getenv.cmake: devboxd reads its environment once, in
# config.c (or main.c), into one struct that main passes down.  No other
# devboxd source may call getenv or secure_getenv: a setting read deep in a
# module escapes the range checks, devboxd --help and docs/devboxd.md.
#
#   cmake -DROOT=<devboxd dir> -P cmake/check_devboxd_getenv.cmake
#
# Fails naming each file and line.  Exempt: tests/, and agent/ and ptyd/,
# which run inside a devbox and read that account's HOME and TERM (the
# devbox's environment, not devboxd's settings).

cmake_minimum_required(VERSION 3.16)

if(NOT ROOT)
    message(FATAL_ERROR "usage: cmake -DROOT=<devboxd dir> -P check_devboxd_getenv.cmake")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/*.c ${ROOT}/*.h)
set(bad)
foreach(src IN LISTS sources)
    if(src MATCHES "^(config\\.c|main\\.c)$" OR src MATCHES "^(tests|agent|ptyd)/")
        continue()
    endif()
    file(STRINGS ${ROOT}/${src} lines REGEX "(^|[^A-Za-z0-9_])(secure_)?getenv[ \t]*\\(")
    foreach(line IN LISTS lines)
        string(REGEX MATCH "(secure_)?getenv[ \t]*\\([^)]*\\)" call "${line}")
        list(APPEND bad "${src}: ${call}")
    endforeach()
endforeach()

if(bad)
    list(JOIN bad "\n  " text)
    message(FATAL_ERROR "devboxd reads its environment only in config.c: add the "
                        "variable to config.c's table (with its default and range, "
                        "shown by devboxd --help and docs/devboxd.md) and pass the "
                        "value down, instead of:\n  ${text}")
endif()
message(STATUS "devboxd getenv: only config.c and main.c read the environment "
               "(tests/, agent/ and ptyd/ exempt)")
