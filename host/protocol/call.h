/*
 * call.h - the call-scope host services: one function per plugin.h service,
 * with exactly its signature. services.c puts them in the table.
 *
 * A struct rlmcp_call is one tools/call, resources/read or prompts/get in
 * progress; it is created by the dispatcher (mcp.c) and lives until its
 * handler has returned and its final message was sent.
 */
#ifndef RLMCP_HOST_CALL_H
#define RLMCP_HOST_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlmcp/plugin.h"

int call_result_text(rlmcp_call *call, const char *text);
int call_result_content(rlmcp_call *call, const char *json, size_t len);
int call_result_json(rlmcp_call *call, const char *json, size_t len);
int call_result_error(rlmcp_call *call, const char *code, const char *remedy,
                      const char *fmt, ...) RLMCP_PRINTF(4, 5);
int call_progress(rlmcp_call *call, double progress, double total,
                  const char *message);
bool call_is_cancelled(rlmcp_call *call);
int call_sleep_ms(rlmcp_call *call, uint32_t ms);
void call_log(rlmcp_call *call, int level, const char *fmt, ...)
    RLMCP_PRINTF(3, 4);
int call_runloop_request(rlmcp_call *call, const struct rlmcp_http_req *req,
                         struct rlmcp_http_resp **resp_out);
void call_http_resp_free(struct rlmcp_http_resp *resp);
int call_runloop_sse(rlmcp_call *call, const struct rlmcp_http_req *req,
                     rlmcp_sse_fn on_event, void *user, long *status_out);
/* ABI 1.1: tunnel services (a devbox tunnel origin, never the API key). */
int call_runloop_tunnel_request(rlmcp_call *call, const struct rlmcp_tunnel *t,
                                const struct rlmcp_http_req *req,
                                struct rlmcp_http_resp **resp_out);
int call_runloop_pty_exchange(rlmcp_call *call, const struct rlmcp_tunnel *t,
                              struct rlmcp_pty_exchange *x);
int call_client_request(rlmcp_call *call, const char *method,
                        const char *params_json, uint32_t timeout_ms,
                        char **result_out);
int call_resource_contents(rlmcp_call *call, const char *uri,
                           const char *mime_type, const void *data, size_t len,
                           bool is_blob);
int call_prompt_message(rlmcp_call *call, const char *role,
                        const char *content_json);
rlmcp_plugin *call_plugin(rlmcp_call *call);
/* ABI 1.2: the call's deadline and why its last request failed. */
uint64_t call_deadline_ms(rlmcp_call *call);
/* ABI 1.6: WebSockets; the host closes what a handler left open. */
int call_runloop_ws_open(rlmcp_call *call, const struct rlmcp_tunnel *t,
                         struct rlmcp_ws_open *o, rlmcp_ws **out);
int call_runloop_ws_send(rlmcp_ws *ws, const void *data, size_t len, bool text);
int call_runloop_ws_recv(rlmcp_ws *ws, uint32_t timeout_ms,
                         struct rlmcp_ws_message *m);
int call_runloop_ws_close(rlmcp_ws *ws, int code);
void call_ws_close_left(struct rlmcp_call *call);
const char *call_last_error(rlmcp_call *call);
/* ABI 1.2: names as this deployment exposes them (textmap.h). */
const char *call_exposed_tool_name(rlmcp_call *call, const char *tool);
const char *call_exposed_param_name(rlmcp_call *call, const char *tool,
                                    const char *param);

#endif
