/*
 * curl_stub.c - the libcurl functions the host calls, each forwarding to
 * rlmcp_curl.so (module_curl.h), which is loaded by the first of them.
 * The host does not link libcurl: a deployment that never reaches its
 * backend never maps libcurl, OpenSSL and the libraries under them. These
 * definitions stay out of the dynamic symbol table, so libcurl's own
 * callers always reach libcurl. When the module is missing, each fails the
 * way libcurl fails without memory (NULL, CURLE_FAILED_INIT); rlclient.c
 * asks modules_get() first and reports the reason.
 */
#define CURL_DISABLE_TYPECHECK /* these are the definitions */
#include <stdarg.h>

/* Hidden: never exported, so a library linked beside the host (the
 * tests link libcurl and libssl) can never bind to these. */
#include "modules.h"
#pragma GCC visibility push(hidden)
#include <curl/curl.h>
#pragma GCC visibility pop
#include "module_curl.h"

static const struct module_curl *fns(void)
{
    return modules_get(MODULE_CURL, NULL, 0);
}

CURLcode curl_global_init(long flags)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
    const struct module_curl *f = fns();

    if (f != NULL)
        f->global_cleanup();
}

CURL *curl_easy_init(void)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->easy_init() : NULL;
}

void curl_easy_cleanup(CURL *h)
{
    const struct module_curl *f = fns();

    if (f != NULL)
        f->easy_cleanup(h);
}

void curl_easy_reset(CURL *h)
{
    const struct module_curl *f = fns();

    if (f != NULL)
        f->easy_reset(h);
}

CURLcode curl_easy_perform(CURL *h)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->easy_perform(h) : CURLE_FAILED_INIT;
}

/* The option's number says its argument's type, as libcurl reads it. */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    const struct module_curl *f = fns();
    CURLcode rc = CURLE_FAILED_INIT;
    va_list ap;

    if (f == NULL)
        return rc;
    va_start(ap, opt);
    if (opt < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = f->easy_setopt(h, opt, v);
    } else if (opt < CURLOPTTYPE_FUNCTIONPOINT) {
        void *v = va_arg(ap, void *);
        rc = f->easy_setopt(h, opt, v);
    } else if (opt < CURLOPTTYPE_OFF_T) {
        void (*v)(void) = va_arg(ap, void (*)(void));
        rc = f->easy_setopt(h, opt, v);
    } else if (opt < CURLOPTTYPE_BLOB) {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = f->easy_setopt(h, opt, v);
    } else {
        void *v = va_arg(ap, void *);
        rc = f->easy_setopt(h, opt, v);
    }
    va_end(ap);
    return rc;
}

/* Every CURLINFO takes a pointer to where the value goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    const struct module_curl *f = fns();
    CURLcode rc = CURLE_FAILED_INIT;
    va_list ap;
    void *out = NULL;

    if (f == NULL)
        return rc;
    va_start(ap, info);
    out = va_arg(ap, void *);
    va_end(ap);
    return f->easy_getinfo(h, info, out);
}

CURLHcode curl_easy_header(CURL *h, const char *name, size_t index,
                           unsigned int origin, int request,
                           struct curl_header **hout)
{
    const struct module_curl *f = fns();

    if (f == NULL)
        return CURLHE_NOT_BUILT_IN;
    return f->easy_header(h, name, index, origin, request, hout);
}

const char *curl_easy_strerror(CURLcode code)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->easy_strerror(code) : "libcurl is not loaded";
}

time_t curl_getdate(const char *p, const time_t *unused)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->getdate(p, unused) : (time_t)-1;
}

curl_mime *curl_mime_init(CURL *h)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->mime_init(h) : NULL;
}

void curl_mime_free(curl_mime *mime)
{
    const struct module_curl *f = fns();

    if (f != NULL)
        f->mime_free(mime);
}

curl_mimepart *curl_mime_addpart(curl_mime *mime)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->mime_addpart(mime) : NULL;
}

CURLcode curl_mime_data(curl_mimepart *part, const char *data, size_t size)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->mime_data(part, data, size) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_filename(curl_mimepart *part, const char *filename)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->mime_filename(part, filename) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_name(curl_mimepart *part, const char *name)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->mime_name(part, name) : CURLE_FAILED_INIT;
}

CURLcode curl_mime_type(curl_mimepart *part, const char *mimetype)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->mime_type(part, mimetype) : CURLE_FAILED_INIT;
}

CURLM *curl_multi_init(void)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->multi_init() : NULL;
}

CURLMcode curl_multi_cleanup(CURLM *m)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->multi_cleanup(m) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->multi_add_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->multi_remove_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMsg *curl_multi_info_read(CURLM *m, int *msgs_in_queue)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->multi_info_read(m, msgs_in_queue) : NULL;
}

CURLMcode curl_multi_perform(CURLM *m, int *running)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->multi_perform(m, running) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_poll(CURLM *m, struct curl_waitfd extra_fds[],
                          unsigned int extra_nfds, int timeout_ms, int *ret)
{
    const struct module_curl *f = fns();

    if (f == NULL)
        return CURLM_INTERNAL_ERROR;
    return f->multi_poll(m, extra_fds, extra_nfds, timeout_ms, ret);
}

CURLSH *curl_share_init(void)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->share_init() : NULL;
}

CURLSHcode curl_share_cleanup(CURLSH *sh)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->share_cleanup(sh) : CURLSHE_NOT_BUILT_IN;
}

/* SHARE/UNSHARE take an int, the lock callbacks function pointers, the
 * rest a pointer, as libcurl reads them. */
CURLSHcode curl_share_setopt(CURLSH *sh, CURLSHoption opt, ...)
{
    const struct module_curl *f = fns();
    CURLSHcode rc = CURLSHE_NOT_BUILT_IN;
    va_list ap;

    if (f == NULL)
        return rc;
    va_start(ap, opt);
    if (opt == CURLSHOPT_SHARE || opt == CURLSHOPT_UNSHARE) {
        int v = va_arg(ap, int);
        rc = f->share_setopt(sh, opt, v);
    } else if (opt == CURLSHOPT_LOCKFUNC) {
        curl_lock_function v = va_arg(ap, curl_lock_function);
        rc = f->share_setopt(sh, opt, v);
    } else if (opt == CURLSHOPT_UNLOCKFUNC) {
        curl_unlock_function v = va_arg(ap, curl_unlock_function);
        rc = f->share_setopt(sh, opt, v);
    } else {
        void *v = va_arg(ap, void *);
        rc = f->share_setopt(sh, opt, v);
    }
    va_end(ap);
    return rc;
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    const struct module_curl *f = fns();

    return f != NULL ? f->slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
    const struct module_curl *f = fns();

    if (f != NULL)
        f->slist_free_all(l);
}
