/*
 * rlclient.c - the host's Runloop HTTP client (see rlclient.h).
 *
 * Each call borrows an (easy, multi) handle pair from a pool. The multi
 * handle owns the connection cache, so a pair returned to the pool keeps its
 * live connections for the next call (libcurl does not support sharing one
 * connection cache between concurrent threads). DNS and TLS sessions are
 * shared across all pairs through a locked CURLSH, so even a new connection
 * resumes TLS instead of doing a full handshake.
 *
 * Transfers are driven with curl_multi_poll in 50 ms slices so that the
 * cancellation probe is checked at least every 50 ms, also while waiting
 * for a slow server; backoff sleeps are sliced the same way.
 */
#include "rlclient.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <inttypes.h>
#include <time.h>

#include "deadline.h"
#include "breaker.h"
#include "log.h"
#include "metrics.h"
#include "random.h"
#include "sse.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0"
#endif

#define RL_DEFAULT_TIMEOUT_MS 30000u
#define RL_DEFAULT_RETRIES 5
#define RL_DEFAULT_RETRY_BASE_MS 1000u
#define RL_MAX_RETRY_DELAY_MS 60000.0
#define RL_DEFAULT_MAX_BODY (16u * 1024u * 1024u)
#define RL_SLICE_MS 50
#define RL_POOL_KEEP 16

struct rl_handle {
    CURL *easy;
    CURLM *multi;
    struct rl_handle *next;
};

struct rlclient {
    char *base_url; /* without a trailing '/' */
    char *unix_socket;
    char *user_agent;
    char *target; /* for messages: base URL without userinfo, or unix:path */
    char *display_base; /* base URL without userinfo */
    unsigned timeout_ms;
    int max_retries;
    unsigned retry_base_ms;
    size_t max_body;
    bool quiet;
    char *tunnel_info_file; /* local engine: devboxd.pid */
    /* The tunnel URL template the backend last announced in its
     * X-Devboxd-Tunnel-Url-Template header (devboxd, any transport). */
    pthread_mutex_t tmpl_lock;
    char *learned_tmpl;
    /* libcurl is initialised and the share made by the first request. */
    pthread_mutex_t ready_lock;
    bool ready;
    CURLSH *share;
    pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
    pthread_mutex_t pool_lock;
    struct rl_handle *pool;
    unsigned pool_size;
    struct breaker breaker; /* API requests only, never tunnels */
    bool no_breaker;
    rlclient_down_fn on_down;
    void *on_down_ctx;
    struct rlclient_clock clock; /* deadlines, backoffs, the breaker */
};

/* One attempt's receiving state. */
struct rl_xfer {
    CURL *easy;
    rlclient_cancel_fn cancelled;
    void *cancel_ctx;
    bool was_cancelled;
    /* plain responses */
    char *body;
    size_t len;
    size_t cap;
    size_t max;
    bool truncated;
    bool nomem;
    /* SSE */
    struct sse_parser *sse;
    int sse_rc;
    bool sse_non2xx;
};

/* The per-call facts shared by all attempts. */
struct rl_call {
    struct rlclient *c;
    const char *api_key;
    const struct rlmcp_http_req *req;
    rlclient_cancel_fn cancelled;
    void *cancel_ctx;
    char url[4096];
    char shown_url[4096]; /* url without userinfo, for messages */
    char request_id[64];
    const char *origin; /* tunnel: replaces base_url, TCP only */
    bool sse;
    int max_retries;
    unsigned timeout_ms;
    size_t max_body;
    uint64_t deadline_ms; /* monotonic; 0: none */
    bool probe;           /* let through the open breaker as its probe */
};

static __thread char tls_last_error[1024];
/* The same without the request line (method and URL): for agents, which
 * cannot call routes; the log and the operator get tls_last_error. */
static __thread char tls_last_reason[1024];

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_rc = -1;

static void global_init_once(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

int rlclient_global_init(void)
{
    pthread_once(&global_once, global_init_once);
    return global_rc;
}

const char *rlclient_last_error(void)
{
    return tls_last_error;
}

const char *rlclient_last_reason(void)
{
    return tls_last_reason;
}

const char *rlclient_target(const struct rlclient *c)
{
    return c->target;
}

static void set_last_error(const char *fmt, ...) RLMCP_PRINTF(1, 2);
static void set_last_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(tls_last_error, sizeof(tls_last_error), fmt, ap);
    va_end(ap);
    snprintf(tls_last_reason, sizeof(tls_last_reason), "%s", tls_last_error);
}

/* ---------------------------------------------------------------------- */
/* Client lifetime                                                        */
/* ---------------------------------------------------------------------- */

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access acc,
                       void *user)
{
    struct rlclient *c = user;

    (void)h;
    (void)acc;
    pthread_mutex_lock(&c->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *user)
{
    struct rlclient *c = user;

    (void)h;
    pthread_mutex_unlock(&c->share_locks[data]);
}

/* "https://user:pw@host/x" -> "https://host/x": userinfo never shows. */
static char *redact_url(const char *url)
{
    const char *scheme_end = strstr(url, "://");
    const char *auth = NULL;
    const char *at = NULL;
    const char *slash = NULL;
    char *out = NULL;

    if (scheme_end == NULL)
        return strdup(url);
    auth = scheme_end + 3;
    slash = strchr(auth, '/');
    at = strchr(auth, '@');
    if (at == NULL || (slash != NULL && at > slash))
        return strdup(url);
    out = malloc(strlen(url) + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, url, (size_t)(auth - url));
    strcpy(out + (auth - url), at + 1);
    return out;
}

static int check_base_url(const char *url)
{
    size_t i;

    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "runloop base URL must start with http:// or https:// "
                "(check runloop.base_url or RUNLOOP_BASE_URL)");
        return -1;
    }
    for (i = 0; url[i] != '\0'; i++) {
        unsigned char ch = (unsigned char)url[i];

        if (ch <= 0x20 || ch == 0x7f) {
            log_msg(RLMCP_LOG_ERROR, NULL,
                    "runloop base URL contains a space or control character");
            return -1;
        }
    }
    return 0;
}

static void client_init_locks(struct rlclient *c)
{
    int i;

    breaker_init(&c->breaker);
    for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_locks[i], NULL);
    pthread_mutex_init(&c->pool_lock, NULL);
    pthread_mutex_init(&c->tmpl_lock, NULL);
    pthread_mutex_init(&c->ready_lock, NULL);
}

static int client_init_share(struct rlclient *c)
{
    c->share = curl_share_init();
    if (c->share == NULL)
        return -1;
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    return 0;
}

static int client_set_target(struct rlclient *c)
{
    size_t n = 0;

    if (c->unix_socket != NULL) {
        n = strlen(c->unix_socket) + 6;
        c->target = malloc(n);
        if (c->target == NULL)
            return -1;
        snprintf(c->target, n, "unix:%s", c->unix_socket);
        return 0;
    }
    c->target = redact_url(c->base_url);
    return c->target != NULL ? 0 : -1;
}

static uint64_t sys_now_ns(void *ctx)
{
    (void)ctx;
    return deadline_now_ns();
}

static void sys_nap_ns(void *ctx, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull),
                          (long)(ns % 1000000000ull)};

    (void)ctx;
    nanosleep(&ts, NULL);
}

static uint64_t client_now_ms(const struct rlclient *c)
{
    return c->clock.now_ns(c->clock.ctx) / 1000000ull;
}

struct rlclient *rlclient_create(const struct rlclient_options *opts)
{
    struct rlclient *c = NULL;
    const char *base = NULL;
    size_t blen = 0;

    if (opts == NULL)
        return NULL;
    base = opts->base_url;
    if (base == NULL || base[0] == '\0')
        base = opts->unix_socket != NULL ? "http://localhost"
                                         : "https://api.runloop.ai";
    if (check_base_url(base) != 0)
        return NULL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    client_init_locks(c);
    c->base_url = strdup(base);
    if (c->base_url == NULL)
        goto fail;
    blen = strlen(c->base_url);
    while (blen > 0 && c->base_url[blen - 1] == '/')
        c->base_url[--blen] = '\0';
    if (opts->unix_socket != NULL) {
        c->unix_socket = strdup(opts->unix_socket);
        if (c->unix_socket == NULL)
            goto fail;
    }
    if (opts->tunnel_info_file != NULL) {
        c->tunnel_info_file = strdup(opts->tunnel_info_file);
        if (c->tunnel_info_file == NULL)
            goto fail;
    }
    c->user_agent =
        strdup(opts->user_agent != NULL ? opts->user_agent
                                        : "runloop-mcp/" RLMCP_VERSION);
    if (c->user_agent == NULL || client_set_target(c) != 0)
        goto fail;
    c->display_base = redact_url(c->base_url);
    if (c->display_base == NULL)
        goto fail;
    c->timeout_ms = opts->default_timeout_ms ? opts->default_timeout_ms
                                             : RL_DEFAULT_TIMEOUT_MS;
    c->max_retries = opts->default_max_retries < 0 ? RL_DEFAULT_RETRIES
                                                   : opts->default_max_retries;
    c->retry_base_ms =
        opts->retry_base_ms ? opts->retry_base_ms : RL_DEFAULT_RETRY_BASE_MS;
    c->max_body =
        opts->default_max_body ? opts->default_max_body : RL_DEFAULT_MAX_BODY;
    c->quiet = opts->quiet;
    c->no_breaker = opts->no_breaker;
    c->clock.now_ns = sys_now_ns;
    c->clock.nap_ns = sys_nap_ns;
    if (opts->clock != NULL)
        c->clock = *opts->clock;
    return c;
fail:
    rlclient_destroy(c);
    return NULL;
}

static void handle_free(struct rl_handle *h)
{
    if (h == NULL)
        return;
    if (h->multi != NULL)
        curl_multi_cleanup(h->multi);
    if (h->easy != NULL)
        curl_easy_cleanup(h->easy);
    free(h);
}

void rlclient_destroy(struct rlclient *c)
{
    int i;

    if (c == NULL)
        return;
    while (c->pool != NULL) {
        struct rl_handle *h = c->pool;

        c->pool = h->next;
        handle_free(h);
    }
    if (c->share != NULL)
        curl_share_cleanup(c->share);
    for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_locks[i]);
    pthread_mutex_destroy(&c->pool_lock);
    pthread_mutex_destroy(&c->tmpl_lock);
    pthread_mutex_destroy(&c->ready_lock);
    breaker_destroy(&c->breaker);
    free(c->learned_tmpl);
    free(c->base_url);
    free(c->unix_socket);
    free(c->tunnel_info_file);
    free(c->user_agent);
    free(c->target);
    free(c->display_base);
    free(c);
}

/*
 * Initialise libcurl and make the client's share, once, at the first
 * request. Returns RLMCP_OK, or RLMCP_EINTERNAL with the
 * reason as the last error and in the log.
 */
static int client_ready(struct rlclient *c)
{
    char err[768] = "";
    int rc = RLMCP_OK;

    pthread_mutex_lock(&c->ready_lock);
    if (c->ready)
        goto out;
    if (rlclient_global_init() != 0 || client_init_share(c) != 0) {
        snprintf(err, sizeof(err), "libcurl failed to initialise");
        rc = RLMCP_EINTERNAL;
        goto out;
    }
    c->ready = true;
out:
    pthread_mutex_unlock(&c->ready_lock);
    if (rc != RLMCP_OK) {
        set_last_error("%s", err);
        log_msg(RLMCP_LOG_ERROR, NULL, "%s", err);
    }
    return rc;
}

static struct rl_handle *pool_get(struct rlclient *c)
{
    struct rl_handle *h = NULL;

    pthread_mutex_lock(&c->pool_lock);
    h = c->pool;
    if (h != NULL) {
        c->pool = h->next;
        c->pool_size--;
    }
    pthread_mutex_unlock(&c->pool_lock);
    if (h != NULL) {
        curl_easy_reset(h->easy);
        return h;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->easy = curl_easy_init();
    h->multi = curl_multi_init();
    if (h->easy == NULL || h->multi == NULL) {
        handle_free(h);
        return NULL;
    }
    return h;
}

static void pool_put(struct rlclient *c, struct rl_handle *h)
{
    bool keep = false;

    pthread_mutex_lock(&c->pool_lock);
    if (c->pool_size < RL_POOL_KEEP) {
        h->next = c->pool;
        c->pool = h;
        c->pool_size++;
        keep = true;
    }
    pthread_mutex_unlock(&c->pool_lock);
    if (!keep)
        handle_free(h);
}

void rlclient_resp_free(struct rlmcp_http_resp *resp)
{
    if (resp == NULL)
        return;
    free((char *)resp->content_type);
    free((char *)resp->body);
    free(resp);
}

/* ---------------------------------------------------------------------- */
/* Validation                                                             */
/* ---------------------------------------------------------------------- */

static bool has_ctl(const char *s, bool space_ok)
{
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch < 0x20 || ch == 0x7f || (!space_ok && ch == ' '))
            return true;
    }
    return false;
}

static int validate_req(const struct rlmcp_http_req *req, const char *api_key)
{
    size_t i;

    if (req == NULL || req->struct_size < RLCLIENT_HTTP_REQ_SIZE_MIN) {
        set_last_error("request is NULL or its struct_size is too small");
        return RLMCP_EINVAL;
    }
    if (req->method == NULL ||
        (strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0)) {
        set_last_error("request method must be \"GET\" or \"POST\"");
        return RLMCP_EINVAL;
    }
    if (req->path == NULL || req->path[0] != '/' || has_ctl(req->path, false)) {
        set_last_error("request path must start with '/' and be URL-encoded "
                       "(no spaces or control characters)");
        return RLMCP_EINVAL;
    }
    if (strcmp(req->method, "GET") == 0 &&
        (req->body != NULL || req->n_parts > 0)) {
        set_last_error("a GET request cannot carry a body");
        return RLMCP_EINVAL;
    }
    if (req->body != NULL && req->n_parts > 0) {
        set_last_error("a request has either a JSON body or multipart parts, "
                       "not both");
        return RLMCP_EINVAL;
    }
    if (req->n_parts > 0 && req->parts == NULL) {
        set_last_error("n_parts is set but parts is NULL");
        return RLMCP_EINVAL;
    }
    for (i = 0; i < req->n_parts; i++) {
        const struct rlmcp_http_part *p = &req->parts[i];

        if (p->name == NULL || (p->data == NULL && p->len > 0)) {
            set_last_error("multipart part %zu needs a name (and data when "
                           "len > 0)",
                           i);
            return RLMCP_EINVAL;
        }
    }
    if (req->accept != NULL && has_ctl(req->accept, true)) {
        set_last_error("Accept value contains control characters");
        return RLMCP_EINVAL;
    }
    if (api_key != NULL && strlen(api_key) > 512) {
        set_last_error("the API key is longer than 512 characters; check "
                       "RUNLOOP_API_KEY");
        return RLMCP_EINVAL;
    }
    if (api_key != NULL && has_ctl(api_key, false)) {
        set_last_error("the API key contains spaces or control characters; "
                       "check RUNLOOP_API_KEY");
        return RLMCP_EINVAL;
    }
    return RLMCP_OK;
}

/* ---------------------------------------------------------------------- */
/* Receiving                                                              */
/* ---------------------------------------------------------------------- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *user)
{
    struct rl_xfer *x = user;
    size_t n = size * nmemb;
    size_t room = x->max - x->len;
    size_t take = n < room ? n : room;

    if (x->len + take + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        char *nb = NULL;

        while (cap < x->len + take + 1)
            cap *= 2;
        if (cap > x->max + 1)
            cap = x->max + 1;
        nb = realloc(x->body, cap);
        if (nb == NULL) {
            x->nomem = true;
            return 0;
        }
        x->body = nb;
        x->cap = cap;
    }
    memcpy(x->body + x->len, ptr, take);
    x->len += take;
    if (take < n) {
        /* Kept max bytes; stop reading rather than download the rest. */
        x->truncated = true;
        return 0;
    }
    return n;
}

static size_t on_sse(char *ptr, size_t size, size_t nmemb, void *user)
{
    struct rl_xfer *x = user;
    size_t n = size * nmemb;
    long status = 0;

    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        x->sse_non2xx = true; /* error bodies are not events */
        return n;
    }
    x->sse_rc = sse_parser_feed(x->sse, ptr, n);
    return x->sse_rc == SSE_OK ? n : 0;
}

static int on_progress(void *user, curl_off_t dt, curl_off_t dn, curl_off_t ut,
                       curl_off_t un)
{
    struct rl_xfer *x = user;

    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    if (x->cancelled != NULL && x->cancelled(x->cancel_ctx)) {
        x->was_cancelled = true;
        return 1;
    }
    return 0;
}

/* Drive one transfer, checking the probe every slice. */
static CURLcode run_transfer(struct rl_handle *h, struct rl_xfer *x)
{
    CURLcode res = CURLE_OK;
    CURLMsg *msg = NULL;
    int running = 1;
    int left = 0;

    if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK)
        return CURLE_FAILED_INIT;
    for (;;) {
        if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
            res = CURLE_FAILED_INIT;
            break;
        }
        if (running == 0)
            break;
        if (x->cancelled != NULL && x->cancelled(x->cancel_ctx)) {
            x->was_cancelled = true;
            res = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        curl_multi_poll(h->multi, NULL, 0, RL_SLICE_MS, NULL);
    }
    if (running == 0) {
        while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == h->easy)
                res = msg->data.result;
        }
    }
    curl_multi_remove_handle(h->multi, h->easy);
    return res;
}

/* ---------------------------------------------------------------------- */
/* Retry policy (runloop-api.md section 1.4)                              */
/* ---------------------------------------------------------------------- */

static bool is_shutdown_path(const char *path)
{
    const char *q = strchr(path, '?');
    size_t n = q != NULL ? (size_t)(q - path) : strlen(path);
    static const char suffix[] = "/shutdown";
    size_t sn = sizeof(suffix) - 1;

    return n >= sn && memcmp(path + n - sn, suffix, sn) == 0;
}

static const char *header_value(CURL *easy, const char *name)
{
    struct curl_header *h = NULL;

    if (curl_easy_header(easy, name, 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
        return NULL;
    return h->value;
}

static bool status_retryable(CURL *easy, long status, const char *path,
                             bool tunnel)
{
    const char *xsr = NULL;

    if (status >= 200 && status <= 299)
        return false;
    /* A tunnel's own statuses are the devbox service's: only the routing
     * layer's "not there yet" answers are retried. */
    if (tunnel)
        return status == 502 || status == 503 || status == 504;
    /* A full disk (507) stays full until someone frees space. */
    if (status == 507)
        return false;
    /* A shutdown refused for in-progress snapshots stays refused. */
    if (status == 409 && is_shutdown_path(path))
        return false;
    xsr = header_value(easy, "x-should-retry");
    if (xsr != NULL && strcmp(xsr, "true") == 0)
        return true;
    if (xsr != NULL && strcmp(xsr, "false") == 0)
        return false;
    /* Unlike the SDK, a 409 without a hint is not retried: it is a
     * conflict with the object's state (a name taken, a snapshot running)
     * that asking again within seconds does not change, and the agent
     * waits out every backoff before it learns of it. */
    return status == 408 || status == 429 || status >= 500;
}

/* In [0, 1); 0 (no jitter) when the random source fails. */
static double rand_unit(void)
{
    uint32_t r = 0;

    if (random_fill(&r, sizeof(r)) != 0)
        r = 0;
    return (double)r / 4294967296.0;
}

/* Server hints, as the SDK reads them; -1 when none applies. */
static double hinted_delay_ms(CURL *easy)
{
    const char *v = NULL;
    char *end = NULL;
    double ms = -1;

    v = header_value(easy, "retry-after-ms");
    if (v != NULL) {
        double d = strtod(v, &end);

        if (end != v && !isnan(d))
            ms = d;
    }
    v = header_value(easy, "retry-after");
    if (v != NULL && ms <= 0) {
        double d = strtod(v, &end);

        if (end != v && !isnan(d)) {
            ms = d * 1000.0;
        } else {
            time_t when = curl_getdate(v, NULL);

            if (when != -1)
                ms = difftime(when, time(NULL)) * 1000.0;
        }
    }
    if (ms != -1 && ms < 0)
        ms = 0;
    return ms;
}

/* Tunnels: min(base/4 * 2^n, 2 s) (250 ms steps by default), as the
 * official clients retry a PTY tunnel that is still being routed; a server
 * hint is followed up to 5 s. */
static long tunnel_delay_ms(const struct rlclient *c, CURL *easy_or_null,
                            int retries_made)
{
    double ms = -1;
    double step = (double)c->retry_base_ms / 4.0 * pow(2.0, retries_made);

    if (easy_or_null != NULL)
        ms = hinted_delay_ms(easy_or_null);
    if (ms >= 0)
        return (long)(ms < 5000.0 ? ms : 5000.0);
    return (long)(step < 2000.0 ? step : 2000.0);
}

static long retry_delay_ms(const struct rlclient *c, CURL *easy_or_null,
                           int retries_made)
{
    double ms = -1;
    double step = 0;

    if (easy_or_null != NULL)
        ms = hinted_delay_ms(easy_or_null);
    if (ms >= 0)
        return (long)ms;
    step = (double)c->retry_base_ms * pow(2.0, retries_made);
    if (step > RL_MAX_RETRY_DELAY_MS)
        step = RL_MAX_RETRY_DELAY_MS;
    return (long)(step * (1.0 - rand_unit() * 0.25));
}

/* Sleep in slices on the client's clock, returning true when the probe
 * fired. */
static bool sleep_cancellable(const struct rlclient *c, long ms,
                              rlclient_cancel_fn cancelled, void *ctx)
{
    /* In ns: whole milliseconds read twice could end the sleep early. */
    uint64_t start = c->clock.now_ns(c->clock.ctx);
    uint64_t total = ms > 0 ? (uint64_t)ms * 1000000ull : 0;

    for (;;) {
        uint64_t elapsed = 0;
        uint64_t slice = 0;

        if (cancelled != NULL && cancelled(ctx))
            return true;
        elapsed = c->clock.now_ns(c->clock.ctx) - start;
        if (elapsed >= total)
            return false;
        slice = total - elapsed;
        if (slice > (uint64_t)RL_SLICE_MS * 1000000ull)
            slice = (uint64_t)RL_SLICE_MS * 1000000ull;
        c->clock.nap_ns(c->clock.ctx, slice);
    }
}

static bool curl_error_retryable(CURLcode res)
{
    switch (res) {
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_FAILED_INIT:
    case CURLE_ABORTED_BY_CALLBACK:
        return false;
    default:
        return true;
    }
}

/* ---------------------------------------------------------------------- */
/* Building a request                                                     */
/* ---------------------------------------------------------------------- */

/* The idempotency key of one mutating request, from the kernel's random
 * source or none: a guessable or repeated key would replay another
 * request's answer. Returns 0, or -1 when getrandom failed. */
static int make_request_id(char *out, size_t n)
{
    unsigned char b[16];

    if (random_fill(b, sizeof(b)) != 0)
        return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* uuid v4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, n,
             "rlmcp-retry-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
             b[11], b[12], b[13], b[14], b[15]);
    return 0;
}

/* name and value joined as "Name: value"; value NULL gives "Name:", which
 * removes a header libcurl would add on its own. */
static struct curl_slist *add_header(struct curl_slist *l, bool *ok,
                                     const char *name, const char *val)
{
    char line[1024];
    struct curl_slist *nl = NULL;

    if (!*ok)
        return l;
    if (val != NULL)
        snprintf(line, sizeof(line), "%s: %s", name, val);
    else
        snprintf(line, sizeof(line), "%s:", name);
    nl = curl_slist_append(l, line);
    explicit_bzero(line, sizeof(line)); /* may hold the key */
    if (nl == NULL) {
        *ok = false;
        return l;
    }
    return nl;
}

static unsigned attempt_timeout_ms(const struct rl_call *rc);

/* x-request-deadline: the Unix time in ms when this attempt stops waiting.
 * The local engine starts no work past it, so a request that sat in a
 * frozen engine's queue never runs after its call has timed out; other
 * servers ignore it. None for a request without a bound (a stream). */
static struct curl_slist *add_deadline(struct curl_slist *l, bool *ok,
                                       const struct rl_call *rc)
{
    unsigned ms = attempt_timeout_ms(rc);
    struct timespec now;
    char val[32];
    uint64_t at;

    if (ms == 0)
        return l;
    clock_gettime(CLOCK_REALTIME, &now);
    at = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u + ms;
    snprintf(val, sizeof(val), "%" PRIu64, at);
    return add_header(l, ok, "x-request-deadline", val);
}

static struct curl_slist *build_headers(const struct rl_call *rc)
{
    const struct rlmcp_http_req *req = rc->req;
    struct curl_slist *h = NULL;
    bool ok = true;
    const char *accept = req->accept;

    if (accept == NULL)
        accept = rc->sse ? "text/event-stream" : "application/json";
    h = add_header(h, &ok, "Accept", accept);
    if (rc->api_key != NULL && rc->api_key[0] != '\0') {
        char auth[600];

        snprintf(auth, sizeof(auth), "Bearer %s", rc->api_key);
        h = add_header(h, &ok, "Authorization", auth);
        explicit_bzero(auth, sizeof(auth));
    }
    /* The SDK sends JSON content type on every non-GET, body or not. */
    if (strcmp(req->method, "GET") != 0 && req->n_parts == 0)
        h = add_header(h, &ok, "Content-Type", "application/json");
    if (rc->request_id[0] != '\0')
        h = add_header(h, &ok, "x-request-id", rc->request_id);
    h = add_deadline(h, &ok, rc);
    h = add_header(h, &ok, "Expect", NULL);
    if (!ok) {
        curl_slist_free_all(h);
        return NULL;
    }
    return h;
}

static curl_mime *build_mime(CURL *easy, const struct rlmcp_http_req *req)
{
    curl_mime *mime = curl_mime_init(easy);
    size_t i;

    if (mime == NULL)
        return NULL;
    for (i = 0; i < req->n_parts; i++) {
        const struct rlmcp_http_part *p = &req->parts[i];
        curl_mimepart *part = curl_mime_addpart(mime);

        if (part == NULL || curl_mime_name(part, p->name) != CURLE_OK ||
            curl_mime_data(part, p->len > 0 ? p->data : "", p->len) !=
                CURLE_OK ||
            (p->filename != NULL &&
             curl_mime_filename(part, p->filename) != CURLE_OK) ||
            (p->content_type != NULL &&
             curl_mime_type(part, p->content_type) != CURLE_OK)) {
            curl_mime_free(mime);
            return NULL;
        }
    }
    return mime;
}

/* What is left of the call's time limit; UINT64_MAX when it has none. */
static uint64_t remaining_ms(const struct rl_call *rc)
{
    uint64_t now = client_now_ms(rc->c);

    if (rc->deadline_ms == 0)
        return UINT64_MAX;
    return rc->deadline_ms > now ? rc->deadline_ms - now : 0;
}

/* One attempt's bound: the request's own, cut to the call's time left. */
static unsigned attempt_timeout_ms(const struct rl_call *rc)
{
    uint64_t left = remaining_ms(rc);

    if (left == UINT64_MAX)
        return rc->timeout_ms;
    if (left == 0)
        left = 1;
    if (rc->timeout_ms == 0 || left < rc->timeout_ms)
        return (unsigned)(left < UINT32_MAX ? left : UINT32_MAX);
    return rc->timeout_ms;
}

static void setup_easy(const struct rl_call *rc, CURL *easy, struct rl_xfer *x,
                       struct curl_slist *headers, curl_mime *mime,
                       char *errbuf)
{
    const struct rlclient *c = rc->c;
    const struct rlmcp_http_req *req = rc->req;
    unsigned attempt_ms = attempt_timeout_ms(rc);

    curl_easy_setopt(easy, CURLOPT_URL, rc->url);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_SHARE, c->share);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, c->user_agent);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
    if (!rc->sse) /* a compressed stream would arrive in bursts */
        curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
    if (c->unix_socket != NULL && rc->origin == NULL)
        curl_easy_setopt(easy, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
    if (attempt_ms > 0)
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)attempt_ms);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(attempt_ms > 0 ? attempt_ms : c->timeout_ms));
    if (mime != NULL) {
        curl_easy_setopt(easy, CURLOPT_MIMEPOST, mime);
    } else if (strcmp(req->method, "POST") == 0) {
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(req->body != NULL ? req->body_len : 0));
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS,
                         req->body != NULL ? req->body : "");
    } else {
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, rc->sse ? on_sse : on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, x);
}

/* ---------------------------------------------------------------------- */
/* The attempt loop                                                       */
/* ---------------------------------------------------------------------- */

enum attempt_outcome {
    OUT_DONE,      /* a final answer (status or SSE end) */
    OUT_RETRY,     /* retryable status: headers hold the hints */
    OUT_CONN_FAIL, /* retryable transport failure */
    OUT_FATAL,     /* return rc at once */
};

struct attempt {
    enum attempt_outcome out;
    int rc;
    long status;
    bool timed_out;
    CURLcode res;
    char err[CURL_ERROR_SIZE];
};

static struct rlmcp_http_resp *make_resp(CURL *easy, struct rl_xfer *x,
                                         long status)
{
    struct rlmcp_http_resp *r = calloc(1, sizeof(*r));
    const char *ct = NULL;

    if (r == NULL)
        return NULL;
    r->struct_size = sizeof(*r);
    r->status = status;
    curl_easy_getinfo(easy, CURLINFO_CONTENT_TYPE, &ct);
    if (ct != NULL) {
        r->content_type = strdup(ct);
        if (r->content_type == NULL) {
            free(r);
            return NULL;
        }
    }
    if (x->body == NULL) {
        x->body = malloc(1);
        if (x->body == NULL) {
            rlclient_resp_free(r);
            return NULL;
        }
    }
    x->body[x->len] = '\0';
    r->body = x->body;
    r->body_len = x->len;
    r->truncated = x->truncated;
    x->body = NULL;
    return r;
}

/* Decide what one finished transfer means. */
static void classify(const struct rl_call *rc, CURL *easy, struct rl_xfer *x,
                     CURLcode res, struct attempt *a)
{
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &a->status);
    a->res = res;
    if (x->was_cancelled) {
        a->out = OUT_FATAL;
        a->rc = RLMCP_ECANCELLED;
        return;
    }
    if (x->nomem || (rc->sse && x->sse_rc == SSE_NOMEM)) {
        a->out = OUT_FATAL;
        a->rc = RLMCP_ENOMEM;
        return;
    }
    if (rc->sse && x->sse_rc == SSE_TOO_LARGE) {
        snprintf(a->err, sizeof(a->err),
                 "a server-sent event exceeded %zu bytes", rc->max_body);
        a->out = OUT_FATAL;
        a->rc = RLMCP_EINTERNAL;
        return;
    }
    /* Our own write aborts (truncation, on_event stop) are answers. */
    if (res == CURLE_WRITE_ERROR && (x->truncated || x->sse_rc == SSE_STOPPED))
        res = CURLE_OK;
    if (res == CURLE_OK) {
        a->out =
            status_retryable(easy, a->status, rc->req->path, rc->origin != NULL)
                ? OUT_RETRY
                : OUT_DONE;
        a->rc = RLMCP_OK;
        return;
    }
    a->timed_out = res == CURLE_OPERATION_TIMEDOUT;
    if (rc->sse && x->sse != NULL && sse_parser_events(x->sse) > 0) {
        /* Events were delivered: the caller resumes, we do not replay. */
        a->out = OUT_FATAL;
        a->rc = a->timed_out ? RLMCP_ETIMEDOUT : RLMCP_EHTTP;
        return;
    }
    a->out = curl_error_retryable(res) ? OUT_CONN_FAIL : OUT_FATAL;
    a->rc = a->timed_out ? RLMCP_ETIMEDOUT : RLMCP_EHTTP;
}

struct sse_sink {
    rlmcp_sse_fn fn;
    void *user;
};

static int sse_forward(void *user, const char *event, const char *id,
                       const char *data, size_t data_len)
{
    struct sse_sink *s = user;

    return s->fn(s->user, event, id, data, data_len);
}

/* A usable tunnel URL template: http(s)://, both placeholders, no spaces
 * or control characters, at most 512 bytes. */
static bool tunnel_template_ok(const char *t)
{
    return t != NULL && strlen(t) <= 512 &&
           (strncmp(t, "http://", 7) == 0 || strncmp(t, "https://", 8) == 0) &&
           strstr(t, "{port}") != NULL && strstr(t, "{tunnel_key}") != NULL &&
           !has_ctl(t, false);
}

/* devboxd says where its tunnels live on every API answer: keep the
 * latest, so tunnels work whether the engine is reached by socket or URL. */
static void learn_tunnel_template(struct rlclient *c, CURL *easy)
{
    const char *v = header_value(easy, "x-devboxd-tunnel-url-template");
    char *copy = NULL;

    if (!tunnel_template_ok(v))
        return;
    pthread_mutex_lock(&c->tmpl_lock);
    if (c->learned_tmpl == NULL || strcmp(c->learned_tmpl, v) != 0) {
        copy = strdup(v);
        if (copy != NULL) {
            free(c->learned_tmpl);
            c->learned_tmpl = copy;
        }
    }
    pthread_mutex_unlock(&c->tmpl_lock);
}

static char *learned_tunnel_template(struct rlclient *c)
{
    char *t = NULL;

    pthread_mutex_lock(&c->tmpl_lock);
    if (c->learned_tmpl != NULL)
        t = strdup(c->learned_tmpl);
    pthread_mutex_unlock(&c->tmpl_lock);
    return t;
}

/* One attempt on a pooled handle. On OUT_DONE fills *resp_out (plain). */
static void attempt_once(const struct rl_call *rc, struct rl_handle *h,
                         struct sse_sink *sink, struct attempt *a,
                         struct rlmcp_http_resp **resp_out)
{
    struct rl_xfer x = {0};
    struct curl_slist *headers = NULL;
    curl_mime *mime = NULL;
    CURLcode res = CURLE_OK;

    memset(a, 0, sizeof(*a));
    x.easy = h->easy;
    x.cancelled = rc->cancelled;
    x.cancel_ctx = rc->cancel_ctx;
    x.max = rc->max_body;
    headers = build_headers(rc);
    if (headers == NULL)
        goto nomem;
    if (rc->req->n_parts > 0) {
        mime = build_mime(h->easy, rc->req);
        if (mime == NULL)
            goto nomem;
    }
    if (rc->sse) {
        x.sse = sse_parser_new(rc->max_body, sse_forward, sink);
        if (x.sse == NULL)
            goto nomem;
    }
    curl_easy_reset(h->easy);
    setup_easy(rc, h->easy, &x, headers, mime, a->err);
    res = run_transfer(h, &x);
    classify(rc, h->easy, &x, res, a);
    if (a->status > 0 && rc->origin == NULL)
        learn_tunnel_template(rc->c, h->easy);
    /* A retryable status keeps its body: it is the answer if retries end. */
    if ((a->out == OUT_DONE || a->out == OUT_RETRY) && !rc->sse) {
        *resp_out = make_resp(h->easy, &x, a->status);
        if (*resp_out == NULL) {
            a->out = OUT_FATAL;
            a->rc = RLMCP_ENOMEM;
        }
    }
    goto out;
nomem:
    a->out = OUT_FATAL;
    a->rc = RLMCP_ENOMEM;
out:
    /* The easy handle must not point at freed headers or mime. */
    curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h->easy, CURLOPT_MIMEPOST, NULL);
    curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(headers);
    curl_mime_free(mime);
    sse_parser_free(x.sse);
    free(x.body);
}

static void describe_failure(const struct rl_call *rc, const struct attempt *a,
                             int attempts)
{
    const struct rlclient *c = rc->c;
    const char *why = a->err[0] != '\0' ? a->err : curl_easy_strerror(a->res);
    char via[600] = "";

    if (c->unix_socket != NULL && rc->origin == NULL)
        snprintf(via, sizeof(via), " via unix:%s", c->unix_socket);
    if (a->rc == RLMCP_ECANCELLED)
        why = "cancelled";
    set_last_error("%s %s%s: %s (%d attempt%s)", rc->req->method, rc->shown_url,
                   via, why, attempts, attempts == 1 ? "" : "s");
    snprintf(tls_last_reason, sizeof(tls_last_reason), "%s (%d attempt%s)", why,
             attempts, attempts == 1 ? "" : "s");
}

static int build_url(struct rl_call *rc)
{
    const char *base = rc->origin != NULL ? rc->origin : rc->c->base_url;
    const char *shown = rc->origin != NULL ? rc->origin : rc->c->display_base;
    int n = snprintf(rc->url, sizeof(rc->url), "%s%s", base, rc->req->path);

    if (n < 0 || (size_t)n >= sizeof(rc->url)) {
        set_last_error("request URL longer than %zu bytes", sizeof(rc->url));
        return RLMCP_EINVAL;
    }
    snprintf(rc->shown_url, sizeof(rc->shown_url), "%s%s", shown,
             rc->req->path);
    return RLMCP_OK;
}

static void log_retry(const struct rl_call *rc, const struct attempt *a,
                      long delay, int attempt_no)
{
    if (a->out == OUT_RETRY)
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "runloop: %s %s answered %ld; retry %d of %d in %ld ms",
                rc->req->method, rc->shown_url, a->status, attempt_no,
                rc->max_retries, delay);
    else
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "runloop: %s %s failed (%s); retry %d of %d in %ld ms",
                rc->req->method, rc->shown_url,
                a->err[0] ? a->err : curl_easy_strerror(a->res), attempt_no,
                rc->max_retries, delay);
}

/* A connection that was never established: the backend is not there. */
static bool attempt_unreachable(const struct attempt *a)
{
    return a->out == OUT_CONN_FAIL && (a->res == CURLE_COULDNT_CONNECT ||
                                       a->res == CURLE_COULDNT_RESOLVE_HOST);
}

/* The breaker learns from every API attempt; tunnels are devboxes' own. */
static void breaker_note(struct rl_call *rc, const struct attempt *a)
{
    struct rlclient *c = rc->c;
    bool fatal = false;

    if (rc->origin != NULL || c->no_breaker)
        return;
    if (a->out == OUT_DONE || a->out == OUT_RETRY) {
        breaker_success(&c->breaker);
        return;
    }
    if (!attempt_unreachable(a))
        return;
    /* Nothing listens on the local engine's socket: no retry within a
     * call brings it back, so fail now (and let the host restart it). */
    fatal = c->unix_socket != NULL;
    breaker_failure(&c->breaker, client_now_ms(c), fatal,
                    a->err[0] ? a->err : curl_easy_strerror(a->res));
    if (fatal && c->on_down != NULL)
        c->on_down(c->on_down_ctx);
}

/* Backoff before the next attempt; unreachable backends get short steps
 * (the breaker ends those retries after a few). */
static long next_delay_ms(const struct rl_call *rc, struct rl_handle *h,
                          const struct attempt *a, int retries)
{
    if (rc->origin != NULL)
        return tunnel_delay_ms(rc->c, a->out == OUT_RETRY ? h->easy : NULL,
                               retries);
    if (attempt_unreachable(a))
        return 100L << (retries < 4 ? retries : 4);
    return retry_delay_ms(rc->c, a->out == OUT_RETRY ? h->easy : NULL, retries);
}

static int fail_now(const struct rl_call *rc, int code, const char *fmt, ...)
    RLMCP_PRINTF(3, 4);
static int fail_now(const struct rl_call *rc, int code, const char *fmt, ...)
{
    char why[700];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    set_last_error("%s %s: %s", rc->req->method, rc->shown_url, why);
    snprintf(tls_last_reason, sizeof(tls_last_reason), "%s", why);
    if (code != RLMCP_ECANCELLED)
        log_msg(rc->c->quiet ? RLMCP_LOG_DEBUG : RLMCP_LOG_WARNING, NULL,
                "runloop: %s", tls_last_error);
    return code;
}

/*
 * Stop retrying when the backoff does not fit the call's time left: the
 * call ends now with an error saying so, never with a late success.
 */
static int out_of_budget(const struct rl_call *rc, const struct attempt *a,
                         long delay, uint64_t left)
{
    if (a->out == OUT_RETRY)
        return fail_now(rc, RLMCP_ETIMEDOUT,
                        "answered HTTP %ld and asked for a retry in %ld ms, "
                        "beyond the %llu ms left of the call's time limit; "
                        "not retried",
                        a->status, delay, (unsigned long long)left);
    return fail_now(rc, RLMCP_ETIMEDOUT,
                    "%s; the next retry (in %ld ms) does not fit the %llu "
                    "ms left of the call's time limit",
                    a->err[0] ? a->err : curl_easy_strerror(a->res), delay,
                    (unsigned long long)left);
}

static int run_call(struct rl_call *rc, struct sse_sink *sink,
                    struct rlmcp_http_resp **resp_out, long *status_out)
{
    struct rl_handle *h = NULL;
    struct attempt a;
    char why[512];
    int retries = 0;
    int rc_out = RLMCP_OK;

    if (rc->origin == NULL &&
        !breaker_allow(&rc->c->breaker, client_now_ms(rc->c), why, sizeof(why)))
        return fail_now(rc, RLMCP_EHTTP, "%s", why);
    h = pool_get(rc->c);
    if (h == NULL) {
        set_last_error("out of memory");
        return RLMCP_ENOMEM;
    }
    for (;;) {
        long delay = 0;
        uint64_t left = 0;
        bool retryable = false;

        if (rc->cancelled != NULL && rc->cancelled(rc->cancel_ctx)) {
            memset(&a, 0, sizeof(a));
            a.rc = RLMCP_ECANCELLED;
            describe_failure(rc, &a, retries);
            rc_out = RLMCP_ECANCELLED;
            goto out;
        }
        if (remaining_ms(rc) == 0) {
            rc_out = fail_now(rc, RLMCP_ETIMEDOUT,
                              "the call's time limit was reached before "
                              "an answer (%d attempt%s)",
                              retries, retries == 1 ? "" : "s");
            goto out;
        }
        attempt_once(rc, h, sink, &a, resp_out);
        breaker_note(rc, &a);
        if (!rc->c->quiet) /* probes of the local engine are not traffic */
            metrics_backend_attempt(a.status);
        if (status_out != NULL)
            *status_out = a.status;
        if (a.rc == RLMCP_ETIMEDOUT && remaining_ms(rc) == 0) {
            rc_out = fail_now(rc, RLMCP_ETIMEDOUT,
                              "no answer within the call's time limit "
                              "(%d attempt%s)",
                              retries + 1, retries == 0 ? "" : "s");
            goto out;
        }
        if (a.timed_out && attempt_timeout_ms(rc) < rc->timeout_ms) {
            /* An attempt that used its whole time got no answer; one
             * with less time left is not worth sending. */
            rc_out = fail_now(rc, RLMCP_ETIMEDOUT,
                              "no answer within %u ms; the call's time limit "
                              "leaves too little for another attempt",
                              rc->timeout_ms);
            goto out;
        }
        retryable = a.out == OUT_RETRY || a.out == OUT_CONN_FAIL;
        if (retryable && rc->origin == NULL &&
            breaker_state(&rc->c->breaker) == BREAKER_OPEN)
            retryable = false; /* down: the breaker answers from now on */
        if (!retryable || retries >= rc->max_retries) {
            if (a.out == OUT_RETRY) /* out of retries: the status stands */
                a.out = OUT_DONE;
            break;
        }
        delay = next_delay_ms(rc, h, &a, retries);
        left = remaining_ms(rc);
        if (left != UINT64_MAX && (uint64_t)delay >= left) {
            rc_out = out_of_budget(rc, &a, delay, left);
            goto out;
        }
        if (resp_out != NULL) {
            rlclient_resp_free(*resp_out);
            *resp_out = NULL;
        }
        retries++;
        metrics_backend_retry();
        log_retry(rc, &a, delay, retries);
        if (sleep_cancellable(rc->c, delay, rc->cancelled, rc->cancel_ctx)) {
            a.rc = RLMCP_ECANCELLED;
            a.out = OUT_FATAL;
            retries--; /* no attempt followed this backoff */
            break;
        }
    }
    rc_out = a.out == OUT_DONE ? RLMCP_OK : a.rc;
    if (rc_out != RLMCP_OK) {
        describe_failure(rc, &a, retries + 1);
        if (rc_out != RLMCP_ECANCELLED)
            log_msg(rc->c->quiet ? RLMCP_LOG_DEBUG : RLMCP_LOG_WARNING, NULL,
                    "runloop: %s", tls_last_error);
    }
out:
    if (rc_out != RLMCP_OK && resp_out != NULL) {
        rlclient_resp_free(*resp_out);
        *resp_out = NULL;
    }
    if (rc_out == RLMCP_ECANCELLED && rc->origin == NULL)
        breaker_abandon(&rc->c->breaker);
    pool_put(rc->c, h);
    return rc_out;
}

static int prepare_call(struct rl_call *rc, struct rlclient *c,
                        const char *api_key, const struct rlmcp_http_req *req,
                        const struct rlclient_bound *b, bool sse)
{
    int err = RLMCP_OK;

    tls_last_error[0] = '\0';
    tls_last_reason[0] = '\0';
    if (c == NULL) {
        set_last_error("no Runloop client");
        return RLMCP_EINVAL;
    }
    err = validate_req(req, api_key);
    if (err == RLMCP_OK)
        err = client_ready(c);
    if (err != RLMCP_OK)
        return err;
    memset(rc, 0, sizeof(*rc));
    rc->c = c;
    rc->api_key = api_key;
    rc->req = req;
    rc->cancelled = b->cancelled;
    rc->cancel_ctx = b->cancel_ctx;
    rc->deadline_ms = b->deadline_ms;
    rc->sse = sse;
    rc->max_retries = req->max_retries < 0 ? c->max_retries : req->max_retries;
    if (sse)
        rc->timeout_ms = req->timeout_ms;
    else
        rc->timeout_ms = req->timeout_ms ? req->timeout_ms : c->timeout_ms;
    if (sse)
        rc->max_body = req->max_body ? req->max_body : 1024u * 1024u;
    else
        rc->max_body = req->max_body ? req->max_body : c->max_body;
    if (strcmp(req->method, "GET") != 0 &&
        make_request_id(rc->request_id, sizeof(rc->request_id)) != 0) {
        set_last_error("the random source (getrandom) failed: no request id, "
                       "so the request was not sent");
        return RLMCP_EINTERNAL;
    }
    return build_url(rc);
}

int rlclient_request_bound(struct rlclient *c, const char *api_key,
                           const struct rlmcp_http_req *req,
                           struct rlmcp_http_resp **resp_out,
                           const struct rlclient_bound *b)
{
    struct rl_call rc;
    int err = RLMCP_OK;

    if (resp_out == NULL || b == NULL)
        return RLMCP_EINVAL;
    *resp_out = NULL;
    err = prepare_call(&rc, c, api_key, req, b, false);
    if (err != RLMCP_OK)
        return err;
    return run_call(&rc, NULL, resp_out, NULL);
}

int rlclient_request(struct rlclient *c, const char *api_key,
                     const struct rlmcp_http_req *req,
                     struct rlmcp_http_resp **resp_out,
                     rlclient_cancel_fn cancelled, void *cancel_ctx)
{
    struct rlclient_bound b = {cancelled, cancel_ctx, 0};

    return rlclient_request_bound(c, api_key, req, resp_out, &b);
}

int rlclient_sse_bound(struct rlclient *c, const char *api_key,
                       const struct rlmcp_http_req *req, rlmcp_sse_fn on_event,
                       void *user, long *status_out,
                       const struct rlclient_bound *b)
{
    struct rl_call rc;
    struct sse_sink sink = {.fn = on_event, .user = user};
    long status = 0;
    int err = RLMCP_OK;

    if (status_out != NULL)
        *status_out = 0;
    if (on_event == NULL || b == NULL)
        return RLMCP_EINVAL;
    err = prepare_call(&rc, c, api_key, req, b, true);
    if (err != RLMCP_OK)
        return err;
    err = run_call(&rc, &sink, NULL, &status);
    if (status_out != NULL)
        *status_out = status;
    return err;
}

int rlclient_sse(struct rlclient *c, const char *api_key,
                 const struct rlmcp_http_req *req, rlmcp_sse_fn on_event,
                 void *user, long *status_out, rlclient_cancel_fn cancelled,
                 void *cancel_ctx)
{
    struct rlclient_bound b = {cancelled, cancel_ctx, 0};

    return rlclient_sse_bound(c, api_key, req, on_event, user, status_out, &b);
}

void rlclient_set_down_hook(struct rlclient *c, rlclient_down_fn fn, void *ctx)
{
    c->on_down = fn;
    c->on_down_ctx = ctx;
}

bool rlclient_backend_down(struct rlclient *c)
{
    return breaker_state(&c->breaker) != BREAKER_CLOSED;
}

int rlclient_breaker_state(struct rlclient *c)
{
    return (int)breaker_state(&c->breaker);
}

/* ---------------------------------------------------------------------- */
/* Tunnels (plugin ABI 1.1)                                               */
/* ---------------------------------------------------------------------- */

static bool tunnel_key_ok(const char *key)
{
    size_t n = key != NULL ? strlen(key) : 0;

    return n >= 1 && n <= 512 &&
           strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789_-") == n;
}

/* tmpl with {port} and {tunnel_key} filled, any path after the host cut. */
static int expand_template(const char *tmpl, const char *key, unsigned port,
                           char *out, size_t n, char *err, size_t errlen)
{
    const char *p = tmpl;
    const char *host = strstr(tmpl, "://");
    size_t o = 0;
    char portbuf[8];

    snprintf(portbuf, sizeof(portbuf), "%u", port);
    if (host == NULL) {
        snprintf(err, errlen, "tunnel URL template '%.100s' has no scheme",
                 tmpl);
        return -1;
    }
    host += 3;
    while (*p != '\0' && !(p > host && *p == '/')) {
        const char *add = NULL;
        size_t skip = 1;
        size_t alen = 1;

        if (strncmp(p, "{port}", 6) == 0) {
            add = portbuf;
            skip = 6;
        } else if (strncmp(p, "{tunnel_key}", 12) == 0) {
            add = key;
            skip = 12;
        }
        alen = add != NULL ? strlen(add) : 1;
        if (o + alen >= n) {
            snprintf(err, errlen, "tunnel origin longer than %zu bytes", n);
            return -1;
        }
        memcpy(out + o, add != NULL ? add : p, alen);
        o += alen;
        p += skip;
    }
    out[o] = '\0';
    return 0;
}

int rlclient_tunnel_origin_build(const char *base_url, const char *tmpl,
                                 const char *key, unsigned port, char *out,
                                 size_t n, char *err, size_t errlen)
{
    const char *host = NULL;
    size_t scheme_len = 0;
    size_t host_len = 0;
    int w = 0;

    if (!tunnel_key_ok(key)) {
        snprintf(err, errlen,
                 "tunnel_key must be 1-512 characters of "
                 "A-Z a-z 0-9 _ -");
        return -1;
    }
    if (port < 1 || port > 65535) {
        snprintf(err, errlen, "tunnel port must be 1-65535, not %u", port);
        return -1;
    }
    if (tmpl != NULL)
        return expand_template(tmpl, key, port, out, n, err, errlen);
    if (base_url == NULL || strstr(base_url, "://") == NULL) {
        snprintf(err, errlen,
                 "no API base URL to derive the tunnel domain "
                 "from");
        return -1;
    }
    scheme_len = (size_t)(strstr(base_url, "://") - base_url);
    host = base_url + scheme_len + 3;
    if (strchr(host, '@') != NULL &&
        strchr(host, '@') < host + strcspn(host, "/"))
        host = strchr(host, '@') + 1; /* userinfo never goes to a tunnel */
    host_len = strcspn(host, ":/?#");
    if (host_len > 4 && strncasecmp(host, "api.", 4) == 0) {
        host += 4;
        host_len -= 4;
    }
    if (host_len == 0) {
        snprintf(err, errlen, "the API base URL has no host");
        return -1;
    }
    w = snprintf(out, n, "%.*s://%u-%s.tunnel.%.*s", (int)scheme_len, base_url,
                 port, key, (int)host_len, host);
    if (w < 0 || (size_t)w >= n) {
        snprintf(err, errlen, "tunnel origin longer than %zu bytes", n);
        return -1;
    }
    return 0;
}

/* devboxd's "tunnel_url_template ..." line; malloc'd or NULL. */
static char *read_tunnel_template(const char *file, char *err, size_t errlen)
{
    FILE *f = fopen(file, "r");
    char line[1024];
    char *out = NULL;

    if (f == NULL) {
        snprintf(err, errlen, "cannot read %s (%s): is devboxd running?", file,
                 strerror(errno));
        return NULL;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "tunnel_url_template ", 20) == 0) {
            line[strcspn(line, "\r\n")] = '\0';
            out = strdup(line + 20);
            break;
        }
    }
    fclose(f);
    if (out == NULL)
        snprintf(err, errlen,
                 "%s names no tunnel listener "
                 "(tunnel_url_template): this devboxd has no "
                 "tunnels; update it",
                 file);
    return out;
}

char *rlclient_tunnel_origin(struct rlclient *c, const char *key, unsigned port)
{
    char err[512] = "";
    char out[1200];
    char *tmpl = NULL;
    int rc = 0;

    if (c == NULL) {
        set_last_error("no Runloop client");
        return NULL;
    }
    tmpl = learned_tunnel_template(c);
    if (tmpl == NULL && c->tunnel_info_file != NULL) {
        tmpl = read_tunnel_template(c->tunnel_info_file, err, sizeof(err));
        if (tmpl == NULL) {
            set_last_error("%s", err);
            return NULL;
        }
    }
    rc = rlclient_tunnel_origin_build(c->base_url, tmpl, key, port, out,
                                      sizeof(out), err, sizeof(err));
    free(tmpl);
    if (rc != 0) {
        set_last_error("%s", err);
        return NULL;
    }
    return strdup(out);
}

int rlclient_tunnel_request(struct rlclient *c, const char *origin,
                            const char *token, const struct rlmcp_http_req *req,
                            struct rlmcp_http_resp **resp_out,
                            rlclient_cancel_fn cancelled, void *cancel_ctx)
{
    struct rlclient_bound b = {cancelled, cancel_ctx, 0};

    return rlclient_tunnel_request_bound(c, origin, token, req, resp_out, &b);
}

int rlclient_tunnel_request_bound(struct rlclient *c, const char *origin,
                                  const char *token,
                                  const struct rlmcp_http_req *req,
                                  struct rlmcp_http_resp **resp_out,
                                  const struct rlclient_bound *b)
{
    struct rl_call rc;
    int err = RLMCP_OK;

    if (resp_out == NULL)
        return RLMCP_EINVAL;
    *resp_out = NULL;
    if (origin == NULL || (strncmp(origin, "http://", 7) != 0 &&
                           strncmp(origin, "https://", 8) != 0)) {
        set_last_error("tunnel origin must be an http:// or https:// URL");
        return RLMCP_EINVAL;
    }
    if (token != NULL && (strlen(token) > 512 || has_ctl(token, false))) {
        set_last_error("the tunnel token is longer than 512 characters or "
                       "holds spaces or control characters");
        return RLMCP_EINVAL;
    }
    err = prepare_call(&rc, c, token, req, b, false);
    if (err != RLMCP_OK)
        return err;
    rc.origin = origin;
    if (req->max_retries < 0)
        rc.max_retries = 4;
    err = build_url(&rc);
    if (err != RLMCP_OK)
        return err;
    return run_call(&rc, NULL, resp_out, NULL);
}
