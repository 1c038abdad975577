/*
 * rlclient.h - the host's Runloop HTTP client (libcurl).
 *
 * One client per process, shared by all worker threads; connections are
 * reused across calls. The caller's key is passed per request and never
 * logged. The dispatcher implements the runloop_request / runloop_sse host
 * services on top of these functions, passing the call's key and a
 * cancellation probe.
 *
 * Retries follow the official Runloop SDK (docs/backends.md): connection
 * errors and timeouts, 408/409/429/>=500, x-should-retry wins, retry-after-ms
 * then Retry-After, else min(1 s * 2^n, 60 s) * (1 - rand * 0.25); a 409 on a
 * path ending in /shutdown is never retried. Non-GET requests carry an
 * x-request-id that stays the same across the retries of one call.
 */
#ifndef RLMCP_HOST_RLCLIENT_H
#define RLMCP_HOST_RLCLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlmcp/plugin.h"

/*
 * The least struct_size of a request the client takes: every field up to
 * max_body, which it reads unconditionally (flags is read only when
 * struct_size covers it). An ABI 1.0 plugin passes 88 on LP64.
 */
#define RLCLIENT_HTTP_REQ_SIZE_MIN                                             \
    (offsetof(struct rlmcp_http_req, max_body) + sizeof(size_t))

struct rlclient;

struct rlclient_options {
    const char *base_url; /* e.g. https://api.runloop.ai or http://localhost */
    const char *unix_socket;     /* non-NULL: connect here (local engine) */
    const char *user_agent;      /* NULL: "runloop-mcp/<version>" */
    unsigned default_timeout_ms; /* per attempt, 30000 when 0 */
    int default_max_retries;     /* 5 when < 0 */
    /* Appended: */
    unsigned retry_base_ms;  /* first backoff step, 1000 when 0 */
    size_t default_max_body; /* response bytes kept, 16 MiB when 0 */
    bool quiet;              /* log failures at debug level (probes) */
    /* Appended (tunnels): local engine only, devboxd's pid file, whose
     * "tunnel_url_template" line names the tunnel listener. Re-read per
     * call, since devboxd picks a new port at each start. */
    const char *tunnel_info_file;
    /* Appended: no circuit breaker (start-up probes that poll an engine
     * coming up must not be answered by it). */
    bool no_breaker;
    /* Appended: the clock of deadlines, backoffs and the breaker; NULL:
     * CLOCK_MONOTONIC and nanosleep. Tests pass a simulated one so that
     * backoffs pass without waiting (copied). */
    const struct rlclient_clock *clock;
};

/* A monotonic clock in ns and a sleep on it (rlclient_options.clock). */
struct rlclient_clock {
    uint64_t (*now_ns)(void *ctx);
    void (*nap_ns)(void *ctx, uint64_t ns);
    void *ctx;
};

/* Probe polled during transfers; true aborts within 100 ms. */
typedef bool (*rlclient_cancel_fn)(void *ctx);

/*
 * What bounds one request: the call's cancellation probe and its deadline
 * (CLOCK_MONOTONIC milliseconds, 0: none). Every attempt's timeout is cut
 * to the time left; a backoff (also a Retry-After hint) that does not fit
 * ends the request with RLMCP_ETIMEDOUT and a message saying so.
 */
struct rlclient_bound {
    rlclient_cancel_fn cancelled;
    void *cancel_ctx;
    uint64_t deadline_ms;
};

/* Called (on the calling thread) when the local engine's socket refused a
 * connection, e.g. to restart an engine the host started. */
typedef void (*rlclient_down_fn)(void *ctx);

/*
 * Initialise libcurl once for the process. The host calls it at startup
 * before any thread exists; rlclient_create calls it too (idempotent).
 * Returns 0, or -1 when libcurl cannot be initialised.
 */
int rlclient_global_init(void);

/* NULL on bad options (logged) or out of memory. opts strings are copied. */
struct rlclient *rlclient_create(const struct rlclient_options *opts);
void rlclient_destroy(struct rlclient *c);

/*
 * Same contract as the runloop_request service in plugin.h: RLMCP_OK with
 * *resp_out whenever an HTTP status arrived; RLMCP_EHTTP (no status after
 * the retries), RLMCP_ETIMEDOUT (the last attempt timed out),
 * RLMCP_ECANCELLED, RLMCP_EINVAL (bad request fields), RLMCP_ENOMEM.
 * api_key NULL or "" sends no Authorization header.
 */
int rlclient_request(struct rlclient *c, const char *api_key,
                     const struct rlmcp_http_req *req,
                     struct rlmcp_http_resp **resp_out,
                     rlclient_cancel_fn cancelled, void *cancel_ctx);

/*
 * Same contract as the runloop_sse service in plugin.h. req->timeout_ms
 * bounds the whole stream (0: no bound beyond cancellation);
 * req->max_body bounds one event (0: 1 MiB; a bigger event ends the stream
 * with RLMCP_EINTERNAL). Retries happen only before the first event; a
 * stream broken after events returns RLMCP_EHTTP (or RLMCP_ETIMEDOUT) so
 * the caller can resume from its last offset.
 */
int rlclient_sse(struct rlclient *c, const char *api_key,
                 const struct rlmcp_http_req *req, rlmcp_sse_fn on_event,
                 void *user, long *status_out, rlclient_cancel_fn cancelled,
                 void *cancel_ctx);

/* The same three, bounded by b (deadline and cancellation). */
int rlclient_request_bound(struct rlclient *c, const char *api_key,
                           const struct rlmcp_http_req *req,
                           struct rlmcp_http_resp **resp_out,
                           const struct rlclient_bound *b);
int rlclient_sse_bound(struct rlclient *c, const char *api_key,
                       const struct rlmcp_http_req *req, rlmcp_sse_fn on_event,
                       void *user, long *status_out,
                       const struct rlclient_bound *b);

void rlclient_resp_free(struct rlmcp_http_resp *resp);

/*
 * Circuit breaker (host/backend/breaker.h): after a few connection failures in a
 * row (at once for a refused local engine socket) API requests fail at
 * once with RLMCP_EHTTP and a message saying the backend is down, until a
 * probe request after a cool-down gets an answer. Tunnels are not
 * affected. True while open or probing.
 */
bool rlclient_backend_down(struct rlclient *c);
/* The breaker's state for metrics: 0 closed, 1 open, 2 half-open. */
int rlclient_breaker_state(struct rlclient *c);
void rlclient_set_down_hook(struct rlclient *c, rlclient_down_fn fn, void *ctx);

/*
 * Why the calling thread's last failed rlclient_request/rlclient_sse
 * failed: one line naming the method and URL (never a key), e.g.
 * "GET http://localhost/v1/devboxes via unix:/s.sock: Couldn't connect to
 * server (1 attempt)". "" when none. Valid until the thread's next call.
 */
const char *rlclient_last_error(void);
/*
 * The same without the method and URL ("Couldn't connect to server (1
 * attempt)"): what a tool's error tells the agent (call_last_error), which
 * cannot call routes; the log keeps rlclient_last_error().
 */
const char *rlclient_last_reason(void);

/* Where requests go, for messages: "https://api.runloop.ai" or
 * "unix:/path/devboxd.sock". Borrowed from the client. */
const char *rlclient_target(const struct rlclient *c);

/*
 * Tunnels (plugin ABI 1.1). The origin of a devbox tunnel port, without a
 * trailing '/': with tmpl (devboxd's "http://{port}-{tunnel_key}.localhost:
 * P") its placeholders filled; else from base_url: scheme://{port}-{key}.
 * tunnel.{host}, host being base_url's host without a leading "api." (its
 * port and path dropped). key must be [A-Za-z0-9_-]{1,512}, port 1-65535.
 * Returns 0, or -1 with a reason in err.
 */
int rlclient_tunnel_origin_build(const char *base_url, const char *tmpl,
                                 const char *key, unsigned port, char *out,
                                 size_t n, char *err, size_t errlen);

/* The same for this client's backend: the template devboxd announced in
 * the X-Devboxd-Tunnel-Url-Template header of its latest API answer, else
 * tunnel_info_file's line when set, else derived from base_url (cloud).
 * malloc'd, or NULL with rlclient_last_error() set. */
char *rlclient_tunnel_origin(struct rlclient *c, const char *key,
                             unsigned port);

/*
 * A request to a tunnel origin: like rlclient_request, but to origin +
 * req->path over TCP (never the unix socket), with "Authorization: Bearer
 * <token>" when token is set, and retrying only connection failures and
 * 502/503/504 (req->max_retries < 0: 4; backoff min(250 ms * 2^n, 2 s), a
 * Retry-After hint up to 5 s).
 */
int rlclient_tunnel_request(struct rlclient *c, const char *origin,
                            const char *token, const struct rlmcp_http_req *req,
                            struct rlmcp_http_resp **resp_out,
                            rlclient_cancel_fn cancelled, void *cancel_ctx);

int rlclient_tunnel_request_bound(struct rlclient *c, const char *origin,
                                  const char *token,
                                  const struct rlmcp_http_req *req,
                                  struct rlmcp_http_resp **resp_out,
                                  const struct rlclient_bound *b);

#endif
