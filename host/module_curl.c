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

__attribute__((visibility("default")))
const struct module_curl rlmcp_module_curl = {
    .head = {MODULE_ABI, sizeof(struct module_curl), RLMCP_VERSION},
    .global_init = curl_global_init,
    .global_cleanup = curl_global_cleanup,
    .easy_init = curl_easy_init,
    .easy_cleanup = curl_easy_cleanup,
    .easy_reset = curl_easy_reset,
    .easy_perform = curl_easy_perform,
    .easy_setopt = curl_easy_setopt,
    .easy_getinfo = curl_easy_getinfo,
    .easy_header = curl_easy_header,
    .easy_strerror = curl_easy_strerror,
    .getdate = curl_getdate,
    .mime_init = curl_mime_init,
    .mime_free = curl_mime_free,
    .mime_addpart = curl_mime_addpart,
    .mime_data = curl_mime_data,
    .mime_filename = curl_mime_filename,
    .mime_name = curl_mime_name,
    .mime_type = curl_mime_type,
    .multi_init = curl_multi_init,
    .multi_cleanup = curl_multi_cleanup,
    .multi_add_handle = curl_multi_add_handle,
    .multi_remove_handle = curl_multi_remove_handle,
    .multi_info_read = curl_multi_info_read,
    .multi_perform = curl_multi_perform,
    .multi_poll = curl_multi_poll,
    .share_init = curl_share_init,
    .share_cleanup = curl_share_cleanup,
    .share_setopt = curl_share_setopt,
    .slist_append = curl_slist_append,
    .slist_free_all = curl_slist_free_all,
};
