/*
 * ws.h - the host's WebSocket client (libwebsockets).
 *
 * Connections to any port of a devbox tunnel (runloop_ws_*, plugin ABI
 * 1.6), opened, used and closed on one thread; and, on the same code, one
 * bounded exchange per call (runloop_pty_exchange, plugin ABI 1.1):
 * connect to a PTY session's data plane on a devbox tunnel, send the input
 * as one binary frame, collect output until it is quiet, a bound passes,
 * the server closes or the call is cancelled, then close with 1000 so the
 * session lives on. Each exchange has its own lws context on the calling
 * thread (lws contexts are single-threaded), so exchanges of concurrent
 * calls never share state. Tokens go in the Authorization header only and
 * never into messages.
 */
#ifndef RLMCP_HOST_WS_H
#define RLMCP_HOST_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlmcp/plugin.h"

/* Where a WebSocket goes, from a tunnel origin and a server path. */
struct ws_target {
    bool tls;          /* https origin: wss */
    char host[600];    /* Host header, without the port */
    char address[600]; /* what we connect to: 127.0.0.1 for *.localhost */
    int port;          /* 80/443 unless the origin names one */
    char path[2100];   /* the server-relative path, query included */
};

/*
 * Split origin ("http(s)://host[:port]") and path (starting with '/', no
 * spaces or control characters, < 2048 bytes) into t. *.localhost and
 * localhost connect to 127.0.0.1 (RFC 6761; glibc does not resolve them).
 * Returns 0, or -1 with a reason in err.
 */
int ws_target_parse(const char *origin, const char *path, struct ws_target *t,
                    char *err, size_t errlen);

/*
 * The URL for messages: scheme://host[:port]path with the values of any
 * token/auth_token/access_token query parameter replaced by "REDACTED".
 */
void ws_shown_url(const struct ws_target *t, char *out, size_t n);

typedef bool (*ws_cancel_fn)(void *ctx);

/* ---- connections (runloop_ws_*, ABI 1.6) ---------------------------- */

/* One WebSocket connection; used on the thread that opened it only. */
struct ws_conn;

struct ws_conn_args {
    const char *origin;      /* the tunnel port's http(s):// origin */
    const char *token;       /* Authorization: Bearer; NULL: none. Read
                                during the open only, never copied */
    const char *path;        /* server-relative, query included */
    const char *subprotocol; /* Sec-WebSocket-Protocol, or NULL */
    size_t max_message;      /* 0: 1 MiB; at most 64 MiB */
    ws_cancel_fn cancelled;  /* polled every 20 ms; may be NULL */
    void *cancel_ctx;
    uint64_t deadline_ms;     /* CLOCK_MONOTONIC ms bounding every step of
                             the connection; 0: none */
    uint32_t connect_ms;      /* the open's own bound; 0: none */
    const char *connect_name; /* how messages name it; NULL: "N ms" */
};

/*
 * Connect. RLMCP_OK with *out set; RLMCP_EHTTP (refused upgrade: its
 * status in *status; or the connection failed), RLMCP_ETIMEDOUT,
 * RLMCP_ECANCELLED, RLMCP_EINVAL (bad origin or path), RLMCP_ENOMEM. The
 * reason, with the URL shown without tokens, goes to err.
 */
int ws_conn_open(const struct ws_conn_args *a, struct ws_conn **out,
                 long *status, char *err, size_t errlen);

/*
 * Send one text or binary message (copied). RLMCP_OK once handed to the
 * socket; RLMCP_EINVAL (longer than max_message), RLMCP_ESTATE (ended),
 * RLMCP_EHTTP, RLMCP_ETIMEDOUT (deadline), RLMCP_ECANCELLED.
 */
int ws_conn_send(struct ws_conn *c, const void *data, size_t len, bool text,
                 char *err, size_t errlen);

/*
 * The next message within timeout_ms (0: what already arrived) and the
 * deadline; m->data is c's until the next recv or close. The end comes
 * once as RLMCP_WS_CLOSED (or RLMCP_ETOOBIG when a message was longer than
 * max_message: then c closed with 1009), then RLMCP_ESTATE. Else
 * RLMCP_ETIMEDOUT, RLMCP_ECANCELLED. Only type, data, len and close_code
 * of m are written.
 */
int ws_conn_recv(struct ws_conn *c, uint32_t timeout_ms,
                 struct rlmcp_ws_message *m, char *err, size_t errlen);

/* Close with code (waiting up to 3 s, never past the deadline, for the
 * server's answer) and free c. NULL is fine. */
void ws_conn_close(struct ws_conn *c, int code);

/* ---- the PTY exchange (runloop_pty_exchange, ABI 1.1) ----------------- */

/*
 * Run one exchange (see runloop_pty_exchange in plugin.h for x's fields)
 * on a connection of its own. token NULL sends no Authorization.
 * cancelled is polled every 20 ms. Returns RLMCP_OK, RLMCP_EHTTP (refused
 * upgrade or connection failure, reason in err), RLMCP_ECANCELLED,
 * RLMCP_EINVAL, RLMCP_ENOMEM.
 */
int ws_pty_exchange(const char *origin, const char *token,
                    struct rlmcp_pty_exchange *x, ws_cancel_fn cancelled,
                    void *cancel_ctx, char *err, size_t errlen);

#endif
