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

struct module_curl {
    struct module_head head;
    CURLcode (*global_init)(long flags);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *h);
    void (*easy_reset)(CURL *h);
    CURLcode (*easy_perform)(CURL *h);
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    CURLHcode (*easy_header)(CURL *h, const char *name, size_t index,
                             unsigned int origin, int request,
                             struct curl_header **hout);
    const char *(*easy_strerror)(CURLcode code);
    time_t (*getdate)(const char *p, const time_t *unused);
    curl_mime *(*mime_init)(CURL *h);
    void (*mime_free)(curl_mime *mime);
    curl_mimepart *(*mime_addpart)(curl_mime *mime);
    CURLcode (*mime_data)(curl_mimepart *part, const char *data, size_t size);
    CURLcode (*mime_filename)(curl_mimepart *part, const char *filename);
    CURLcode (*mime_name)(curl_mimepart *part, const char *name);
    CURLcode (*mime_type)(curl_mimepart *part, const char *mimetype);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *m);
    CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
    CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
    CURLMsg *(*multi_info_read)(CURLM *m, int *msgs_in_queue);
    CURLMcode (*multi_perform)(CURLM *m, int *running);
    CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra_fds[],
                            unsigned int extra_nfds, int timeout_ms, int *ret);
    CURLSH *(*share_init)(void);
    CURLSHcode (*share_cleanup)(CURLSH *sh);
    CURLSHcode (*share_setopt)(CURLSH *sh, CURLSHoption opt, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
};

#endif
