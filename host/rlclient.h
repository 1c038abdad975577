/*
 * rlclient.h - the host's Runloop HTTP client (libcurl).
 *
 * One client per process, shared by all worker threads; connections are
 * reused across calls. The caller's key is passed per request and never
 * logged. The dispatcher implements the runloop_request / runloop_sse host
 * services on top of these functions, passing the call's key and a
 * cancellation probe.
 */
#ifndef RLMCP_HOST_RLCLIENT_H
#define RLMCP_HOST_RLCLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "rlmcp/plugin.h"

struct rlclient;

struct rlclient_options {
    const char *base_url;    /* e.g. https://api.runloop.ai or http://localhost */
    const char *unix_socket; /* non-NULL: connect here (local engine) */
    const char *user_agent;
    unsigned default_timeout_ms; /* per attempt, 30000 when 0 */
    int default_max_retries;     /* 5 when < 0 */
};

/* Probe polled during transfers; true aborts within 100 ms. */
typedef bool (*rlclient_cancel_fn)(void *ctx);

struct rlclient *rlclient_create(const struct rlclient_options *opts);
void rlclient_destroy(struct rlclient *c);

/* Same contract as the runloop_request service in plugin.h. */
int rlclient_request(struct rlclient *c, const char *api_key,
                     const struct rlmcp_http_req *req,
                     struct rlmcp_http_resp **resp_out,
                     rlclient_cancel_fn cancelled, void *cancel_ctx);

/* Same contract as the runloop_sse service in plugin.h. */
int rlclient_sse(struct rlclient *c, const char *api_key,
                 const struct rlmcp_http_req *req, rlmcp_sse_fn on_event,
                 void *user, long *status_out, rlclient_cancel_fn cancelled,
                 void *cancel_ctx);

void rlclient_resp_free(struct rlmcp_http_resp *resp);

#endif
