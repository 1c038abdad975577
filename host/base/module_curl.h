/*
 * module_curl.h - the table rlmcp_curl.so exports: the libcurl functions
 * the host calls, so that libcurl and the TLS and protocol libraries under
 * it are mapped at the first backend request rather than at start
 * (modules.h). curl_stub.c defines the curl_* functions the host links
 * against; each forwards through this table.
 */
#ifndef RLMCP_HOST_MODULE_CURL_H
#define RLMCP_HOST_MODULE_CURL_H

#include <time.h>

#include <curl/curl.h>

#include "modules.h"

/*
 * The fixed-argument functions, one row each: R(return type, name after
 * "curl_", parameters, arguments, what the stub returns without the module)
 * and V(name, parameters, arguments) for those returning nothing. The table,
 * the module's initialiser and the host's forwarders are all made from it.
 */
#define MODULE_CURL_CALLS(R, V)                                                \
    R(CURLcode, global_init, (long flags), (flags), CURLE_FAILED_INIT)         \
    V(global_cleanup, (void), ())                                              \
    R(CURL *, easy_init, (void), (), NULL)                                     \
    V(easy_cleanup, (CURL * h), (h))                                           \
    V(easy_reset, (CURL * h), (h))                                             \
    R(CURLcode, easy_perform, (CURL * h), (h), CURLE_FAILED_INIT)              \
    R(CURLHcode, easy_header,                                                  \
      (CURL * h, const char *name, size_t index, unsigned int origin,          \
       int request, struct curl_header **hout),                                \
      (h, name, index, origin, request, hout), CURLHE_NOT_BUILT_IN)            \
    R(const char *, easy_strerror, (CURLcode code), (code),                    \
      "libcurl is not loaded")                                                 \
    R(time_t, getdate, (const char *p, const time_t *unused), (p, unused),     \
      (time_t)-1)                                                              \
    R(curl_mime *, mime_init, (CURL * h), (h), NULL)                           \
    V(mime_free, (curl_mime * mime), (mime))                                   \
    R(curl_mimepart *, mime_addpart, (curl_mime * mime), (mime), NULL)         \
    R(CURLcode, mime_data,                                                     \
      (curl_mimepart * part, const char *data, size_t size),                   \
      (part, data, size), CURLE_FAILED_INIT)                                   \
    R(CURLcode, mime_filename, (curl_mimepart * part, const char *filename),   \
      (part, filename), CURLE_FAILED_INIT)                                     \
    R(CURLcode, mime_name, (curl_mimepart * part, const char *name),           \
      (part, name), CURLE_FAILED_INIT)                                         \
    R(CURLcode, mime_type, (curl_mimepart * part, const char *mimetype),       \
      (part, mimetype), CURLE_FAILED_INIT)                                     \
    R(CURLM *, multi_init, (void), (), NULL)                                   \
    R(CURLMcode, multi_cleanup, (CURLM * m), (m), CURLM_INTERNAL_ERROR)        \
    R(CURLMcode, multi_add_handle, (CURLM * m, CURL * h), (m, h),              \
      CURLM_INTERNAL_ERROR)                                                    \
    R(CURLMcode, multi_remove_handle, (CURLM * m, CURL * h), (m, h),           \
      CURLM_INTERNAL_ERROR)                                                    \
    R(CURLMsg *, multi_info_read, (CURLM * m, int *msgs_in_queue),             \
      (m, msgs_in_queue), NULL)                                                \
    R(CURLMcode, multi_perform, (CURLM * m, int *running), (m, running),       \
      CURLM_INTERNAL_ERROR)                                                    \
    R(CURLMcode, multi_poll,                                                   \
      (CURLM * m, struct curl_waitfd extra_fds[], unsigned int extra_nfds,     \
       int timeout_ms, int *ret),                                              \
      (m, extra_fds, extra_nfds, timeout_ms, ret), CURLM_INTERNAL_ERROR)       \
    R(CURLSH *, share_init, (void), (), NULL)                                  \
    R(CURLSHcode, share_cleanup, (CURLSH * sh), (sh), CURLSHE_NOT_BUILT_IN)    \
    R(struct curl_slist *, slist_append,                                       \
      (struct curl_slist * l, const char *s), (l, s), NULL)                    \
    V(slist_free_all, (struct curl_slist * l), (l))

#define MODULE_CURL_FIELD_R(type, name, params, args, fail) type(*name) params;
#define MODULE_CURL_FIELD_V(name, params, args) void(*name) params;

struct module_curl {
    struct module_head head;
    MODULE_CURL_CALLS(MODULE_CURL_FIELD_R, MODULE_CURL_FIELD_V)
    /* Variadic: their stubs pass the argument on by the type it has. */
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    CURLSHcode (*share_setopt)(CURLSH *sh, CURLSHoption opt, ...);
};

#endif
