/*
 * modules.h - the host's optional parts, each a shared object of its own in
 * <libdir>/runloop-mcp/modules, loaded on first use.
 *
 * A stdio deployment never maps libmicrohttpd, libwebsockets or libcurl
 * until it needs them: the Streamable HTTP transport (rlmcp_http.so) is
 * loaded when the deployment serves HTTP, the WebSocket client
 * (rlmcp_ws.so) at the first WebSocket, libcurl (rlmcp_curl.so) at the
 * first backend request, libcrypto (rlmcp_crypto.so) at the first digest
 * (task ids, request states, the audit log). Each module exports one table,
 * named rlmcp_module_<name>, that starts with struct module_head; the host
 * checks its version before using it. Modules resolve the host functions they
 * call from the executable (linked with a dynamic list of exactly those). A
 * module is never unloaded: its code may run until the process exits.
 */
#ifndef RLMCP_HOST_MODULES_H
#define RLMCP_HOST_MODULES_H

#include <stddef.h>

#include "rlmcp/plugin.h"

struct mcp_dispatcher;
struct host_config;
/* The WebSocket client's types (backend/ws.h, a layer above). */
struct ws_conn_args;
struct ws_conn;

/* Bumped whenever a table below changes; host and modules must agree. */
#define MODULE_ABI 3u

enum module_id {
    MODULE_HTTP,
    MODULE_WS,
    MODULE_CURL,
    MODULE_CRYPTO,
    MODULE_COUNT
};

struct module_head {
    unsigned abi;        /* MODULE_ABI */
    size_t size;         /* sizeof the whole table */
    const char *version; /* RLMCP_VERSION of the build */
};

/* rlmcp_http.so: the Streamable HTTP transport (http.h). */
struct module_http {
    struct module_head head;
    int (*serve)(struct mcp_dispatcher *d, const struct host_config *cfg);
};

/* rlmcp_ws.so: the WebSocket client (ws.h). */
struct module_ws {
    struct module_head head;
    int (*pty_exchange)(const char *origin, const char *token,
                        struct rlmcp_pty_exchange *x,
                        bool (*cancelled)(void *ctx), void *cancel_ctx,
                        char *err, size_t errlen);
    int (*conn_open)(const struct ws_conn_args *a, struct ws_conn **out,
                     long *status, char *err, size_t errlen);
    int (*conn_send)(struct ws_conn *c, const void *data, size_t len, bool text,
                     char *err, size_t errlen);
    int (*conn_recv)(struct ws_conn *c, uint32_t timeout_ms,
                     struct rlmcp_ws_message *m, char *err, size_t errlen);
    void (*conn_close)(struct ws_conn *c, int code);
};

/*
 * The module's table, loading it on the first call (thread-safe). NULL when
 * it cannot be loaded, with the reason (the missing file's path and what to
 * do) in err; the same reason is returned to every later caller.
 */
const void *modules_get(enum module_id id, char *err, size_t errlen);

/* The directory modules are loaded from (malloc'd): $RLMCP_MODULE_DIR, else
 * <bindir>/../lib{,64}/runloop-mcp/modules, else the install path. */
char *modules_dir(void);

/* http_serve() through the module; 1 with the reason logged if absent. */
int modules_http_serve(struct mcp_dispatcher *d, const struct host_config *cfg);

/* ws_pty_exchange() through the module; RLMCP_EINTERNAL with the reason in
 * err if absent. cancelled is a ws_cancel_fn. */
int modules_ws_pty_exchange(const char *origin, const char *token,
                            struct rlmcp_pty_exchange *x,
                            bool (*cancelled)(void *ctx), void *cancel_ctx,
                            char *err, size_t errlen);

#endif
