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

/* Each fixed-argument function: forward, or fail as libcurl fails without
 * memory when the module cannot be loaded. */
#define FORWARD_R(type, name, params, args, fail)                              \
    type curl_##name params                                                    \
    {                                                                          \
        const struct module_curl *f = fns();                                   \
                                                                               \
        return f != NULL ? f->name args : fail;                                \
    }
#define FORWARD_V(name, params, args)                                          \
    void curl_##name params                                                    \
    {                                                                          \
        const struct module_curl *f = fns();                                   \
                                                                               \
        if (f != NULL)                                                         \
            f->name args;                                                      \
    }

MODULE_CURL_CALLS(FORWARD_R, FORWARD_V)

/*
 * Reads the next argument of the va_list ap as type and passes it on as
 * fn(handle, opt, value), into rc: a variadic option function forwards
 * each argument with the type its caller passed.
 */
#define PASS_ARG(type, fn, handle)                                             \
    do {                                                                       \
        type v_ = va_arg(ap, type);                                            \
        rc = f->fn(handle, opt, v_);                                           \
    } while (0)

typedef void (*curl_fnptr)(void);

/* The option's number says its argument's type, as libcurl reads it. */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    const struct module_curl *f = fns();
    CURLcode rc = CURLE_FAILED_INIT;
    va_list ap;

    if (f == NULL)
        return rc;
    va_start(ap, opt);
    if (opt < CURLOPTTYPE_OBJECTPOINT)
        PASS_ARG(long, easy_setopt, h);
    else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
        PASS_ARG(void *, easy_setopt, h);
    else if (opt < CURLOPTTYPE_OFF_T)
        PASS_ARG(curl_fnptr, easy_setopt, h);
    else if (opt < CURLOPTTYPE_BLOB)
        PASS_ARG(curl_off_t, easy_setopt, h);
    else
        PASS_ARG(void *, easy_setopt, h);
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
    if (opt == CURLSHOPT_SHARE || opt == CURLSHOPT_UNSHARE)
        PASS_ARG(int, share_setopt, sh);
    else if (opt == CURLSHOPT_LOCKFUNC)
        PASS_ARG(curl_lock_function, share_setopt, sh);
    else if (opt == CURLSHOPT_UNLOCKFUNC)
        PASS_ARG(curl_unlock_function, share_setopt, sh);
    else
        PASS_ARG(void *, share_setopt, sh);
    va_end(ap);
    return rc;
}
