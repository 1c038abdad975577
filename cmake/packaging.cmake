# Packages: `cpack -G DEB` in a build configured with
# -DCMAKE_INSTALL_PREFIX=/usr makes three .deb files (docs/packages.md):
#
#   runloop-mcp      the server, its plugins, the deployments, the HTTP
#                    service unit, runloop-mcp(1), runloop-mcp.yaml(5)
#   devboxd          the local engine, its agent and ptyd, its service unit,
#                    devboxd(8)
#   runloop-mcp-dev  the plugin SDK: header, helper library, pkg-config and
#                    CMake files, the example
#
# The components are named by the install() rules (COMPONENT server, engine,
# dev); shared-library dependencies come from dpkg-shlibdeps.

set(RLMCP_MAN_DIR ${CMAKE_INSTALL_MANDIR})
foreach(page runloop-mcp.1:man1:server runloop-mcp.yaml.5:man5:server
             devboxd.8:man8:engine)
    string(REPLACE ":" ";" parts ${page})
    list(GET parts 0 file)
    list(GET parts 1 section)
    list(GET parts 2 comp)
    configure_file(${PROJECT_SOURCE_DIR}/man/${file}
                   ${PROJECT_BINARY_DIR}/man/${file} @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/man/${file}
            DESTINATION ${RLMCP_MAN_DIR}/${section} COMPONENT ${comp})
endforeach()

# systemd units go where systemd looks for packaged units, whatever the
# prefix (/usr/lib/systemd/system for /usr).
install(FILES packaging/systemd/runloop-mcp.service
        DESTINATION lib/systemd/system COMPONENT server)
install(FILES packaging/systemd/devboxd.service
        DESTINATION lib/systemd/system COMPONENT engine)
# Templates of /etc/runloop-mcp/runloop-mcp.yaml and /etc/default/runloop-mcp:
# the package's postinst copies them once (whatever the install prefix), the
# operator edits them after.
install(FILES packaging/runloop-mcp.yaml packaging/runloop-mcp.default
        DESTINATION ${CMAKE_INSTALL_DATADIR}/runloop-mcp/etc COMPONENT server)
install(FILES README.md LICENSE docs/cli.md docs/deployments.md docs/tools.md
              docs/errors.md docs/http.md docs/backends.md docs/operations.md
              docs/packages.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT server)
install(FILES docs/devboxd.md docs/sandbox.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT engine)

set(CPACK_PACKAGE_NAME runloop-mcp)
set(CPACK_PACKAGE_VENDOR "runloop-mcp")
set(CPACK_PACKAGE_CONTACT "runloop-mcp maintainers <maintainers@runloop-mcp.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "MCP server giving AI agents disposable Linux sandboxes")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_COMPONENTS_ALL server engine dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/runloopai/runloop-mcp")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME runloop-mcp)
set(CPACK_COMPONENT_SERVER_DESCRIPTION
    "MCP server giving AI agents disposable Linux sandboxes
 runloop-mcp serves Model Context Protocol tools (create a devbox, run code,
 move files, snapshots) over stdio or Streamable HTTP, driving the Runloop
 API or the local engine (package devboxd). Plugins, deployments, a
 hardened systemd unit for the HTTP server, metrics and an audit log.")
set(CPACK_DEBIAN_SERVER_PACKAGE_RECOMMENDS devboxd)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/server/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/server/postrm)
set(CPACK_DEBIAN_ENGINE_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/engine/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/engine/postrm)

set(CPACK_DEBIAN_ENGINE_PACKAGE_NAME devboxd)
set(CPACK_DEBIAN_ENGINE_PACKAGE_SECTION admin)
set(CPACK_COMPONENT_ENGINE_DESCRIPTION
    "local Runloop-compatible devbox engine
 devboxd serves the Runloop REST API on this machine with real isolated
 sandboxes (namespaces, cgroups, seccomp, overlay roots), their agent and
 PTY server, and a systemd unit.")
# Programs devboxd runs, not found by dpkg-shlibdeps.
set(CPACK_DEBIAN_ENGINE_PACKAGE_DEPENDS "runc, mmdebstrap, slirp4netns, iproute2, e2fsprogs")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME runloop-mcp-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libcjson-dev, pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS runloop-mcp)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "runloop-mcp plugin SDK
 The plugin ABI header (rlmcp/plugin.h), the helper library, pkg-config and
 CMake package files, and the hello example, to build plugins out of tree.")

include(CPack)
