# cmake -DNM=nm -DOUT=list -DMODULES=a.so,b.so -P module_imports.cmake
# Writes a linker dynamic list of the symbols the modules leave undefined,
# for the host executable to export (host/base/modules.h). Names of libcurl and
# libcrypto are left out: the host's own definitions of them (curl_stub.c,
# crypto_stub.c) forward to modules and must never be what a library finds.
set(names "")
string(REPLACE "," ";" MODULES "${MODULES}")
foreach(mod ${MODULES})
    execute_process(COMMAND ${NM} -D --undefined-only --format=posix ${mod}
                    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${NM} failed on ${mod}")
    endif()
    string(REPLACE "\n" ";" lines "${out}")
    foreach(line ${lines})
        string(REGEX MATCH "^([A-Za-z_][A-Za-z0-9_]*)(@[^ ]*)? [Uw]" m "${line}")
        set(name "${CMAKE_MATCH_1}")
        set(versioned "${CMAKE_MATCH_2}")
        # Versioned names come from system libraries, never from the host.
        if(m AND NOT versioned AND NOT name MATCHES "^(curl_|CRYPTO_|EVP_|HMAC$|SHA256$)")
            list(APPEND names "${name}")
        endif()
    endforeach()
endforeach()
if(NOT names)
    message(FATAL_ERROR "no undefined symbols found in ${MODULES}")
endif()
list(REMOVE_DUPLICATES names)
list(SORT names)
set(text "{\n")
foreach(n ${names})
    string(APPEND text "    ${n};\n")
endforeach()
string(APPEND text "};\n")
file(WRITE ${OUT}.tmp "${text}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})
