/*
 * module_ws.c - rlmcp_ws.so: the WebSocket client (ws.c, on
 * libwebsockets), loaded at a deployment's first WebSocket (modules.h).
 */
#include "modules.h"
#include "ws.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif

__attribute__((visibility("default")))
const struct module_ws rlmcp_module_ws = {
    .head = {MODULE_ABI, sizeof(struct module_ws), RLMCP_VERSION},
    .pty_exchange = ws_pty_exchange,
    .conn_open = ws_conn_open,
    .conn_send = ws_conn_send,
    .conn_recv = ws_conn_recv,
    .conn_close = ws_conn_close,
};
