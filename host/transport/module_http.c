/*
 * module_http.c - rlmcp_http.so: the Streamable HTTP transport (http.c,
 * http_serve.c, on libmicrohttpd), loaded only by deployments that serve
 * HTTP (modules.h).
 */
#include "config.h"
#include "http.h"
#include "modules.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif

__attribute__((visibility("default")))
const struct module_http rlmcp_module_http = {
    .head = {MODULE_ABI, sizeof(struct module_http), RLMCP_VERSION},
    .serve = http_serve,
};
