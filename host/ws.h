/*
 * ws.h - the host's WebSocket client for PTY sessions (libwebsockets).
 *
 * One bounded exchange per call (runloop_pty_exchange, plugin ABI 1.1):
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
int ws_target_parse(const char *origin, const char *path,
                    struct ws_target *t, char *err, size_t errlen);

/*
 * The URL for messages: scheme://host[:port]path with the values of any
 * token/auth_token/access_token query parameter replaced by "REDACTED".
 */
void ws_shown_url(const struct ws_target *t, char *out, size_t n);

typedef bool (*ws_cancel_fn)(void *ctx);

/*
 * Run one exchange (see runloop_pty_exchange in plugin.h for x's fields).
 * token NULL sends no Authorization. cancelled is polled every 20 ms.
 * Returns RLMCP_OK, RLMCP_EHTTP (refused upgrade or connection failure,
 * reason in err), RLMCP_ECANCELLED, RLMCP_EINVAL, RLMCP_ENOMEM.
 */
int ws_pty_exchange(const char *origin, const char *token,
                    struct rlmcp_pty_exchange *x, ws_cancel_fn cancelled,
                    void *cancel_ctx, char *err, size_t errlen);

#endif
