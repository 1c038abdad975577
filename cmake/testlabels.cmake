# testlabels.cmake: every ctest test gets a label and a timeout, so
# `ctest -L unit` is the quick inner loop and no test can hang the suite.
#
# Labels, from the test's name unless its CMakeLists set LABELS itself:
#   unit        C tests of one module (no engine, no sandbox, no Node)
#   oracle      the host's schema validator against outside oracles run
#               by Node (JSON-Schema-Test-Suite data, ajv from tests/node_modules)
#   script      our own scripts' tests run by their interpreter (Python),
#               no engine (e.g. the code contexts' gateway, test_ctxgw)
#   sandbox     tests that start real sandboxes (test_sandbox_*, test_ptyd)
#   e2e         a real devboxd and/or host driven by official clients
#   conformance the official MCP conformance suite
#   fuzz        replays of the fuzzing corpora
# Tests registered under devboxd/ also carry the label devboxd, so a pass
# can pick the host's tests alone (-L unit -LE devboxd).
# A test without its own TIMEOUT gets RLMCP_TEST_TIMEOUT seconds.
#
# A CMakeLists.txt that adds tests calls rlmcp_label_tests() once (anywhere:
# the work runs when the directory is done); configuring fails if one does
# not, naming the directory.

set(RLMCP_TEST_TIMEOUT 300 CACHE STRING "Default ctest timeout in seconds")

function(_rlmcp_test_label name out)
    if(name MATCHES "^fuzz_")
        set(label fuzz)
    elseif(name MATCHES "^conformance_")
        set(label conformance)
    elseif(name MATCHES "^test_sandbox_" OR name STREQUAL "test_ptyd")
        set(label sandbox)
    elseif(name MATCHES "^test_")
        set(label unit)
    else()
        set(label e2e)
    endif()
    set(${out} ${label} PARENT_SCOPE)
endfunction()

function(_rlmcp_label_dir_tests)
    get_property(tests DIRECTORY PROPERTY TESTS)
    string(FIND "${CMAKE_CURRENT_SOURCE_DIR}/" "${PROJECT_SOURCE_DIR}/devboxd/" _in_devboxd)
    foreach(t IN LISTS tests)
        get_test_property(${t} LABELS labels)
        if(NOT labels)
            _rlmcp_test_label(${t} labels)
        endif()
        if(_in_devboxd EQUAL 0 AND NOT "devboxd" IN_LIST labels)
            list(APPEND labels devboxd)
        endif()
        set_tests_properties(${t} PROPERTIES LABELS "${labels}")
        get_test_property(${t} TIMEOUT timeout)
        if(NOT timeout)
            set_tests_properties(${t} PROPERTIES TIMEOUT ${RLMCP_TEST_TIMEOUT})
        endif()
    endforeach()
endfunction()

# Labels and timeouts for the tests of the calling directory.
function(rlmcp_label_tests)
    get_property(done DIRECTORY PROPERTY RLMCP_TESTS_LABELLED)
    if(NOT done)
        set_property(DIRECTORY PROPERTY RLMCP_TESTS_LABELLED TRUE)
        cmake_language(DEFER CALL _rlmcp_label_dir_tests)
    endif()
endfunction()

# Called last by the top-level CMakeLists.txt: every directory with tests
# must have labelled them.
function(rlmcp_check_test_labels dir)
    get_property(tests DIRECTORY ${dir} PROPERTY TESTS)
    get_property(done DIRECTORY ${dir} PROPERTY RLMCP_TESTS_LABELLED)
    if(tests AND NOT done)
        message(FATAL_ERROR "${dir}/CMakeLists.txt adds tests but does not call "
                            "rlmcp_label_tests() (see cmake/testlabels.cmake)")
    endif()
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
        rlmcp_check_test_labels(${sub})
    endforeach()
endfunction()
