/*
 * module_curl.c - rlmcp_curl.so: libcurl's functions as a table
 * (module_curl.h). Linked against libcurl, so the package depends on it as
 * on any library.
 */
#define CURL_DISABLE_TYPECHECK /* the table takes the functions' addresses */
#include "module_curl.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif

#define INIT_R(type, name, params, args, fail) .name = curl_##name,
#define INIT_V(name, params, args) .name = curl_##name,

/* clang-format off: the rows' initialisers stand one a line */
__attribute__((visibility("default")))
const struct module_curl rlmcp_module_curl = {
    .head = {MODULE_ABI, sizeof(struct module_curl), RLMCP_VERSION},
    MODULE_CURL_CALLS(INIT_R, INIT_V).easy_setopt = curl_easy_setopt,
    .easy_getinfo = curl_easy_getinfo,
    .share_setopt = curl_share_setopt,
};
/* clang-format on */
