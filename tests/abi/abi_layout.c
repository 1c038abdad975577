/*
 * Every sized struct of the plugin ABI, field by field, as the header this
 * object is built against lays it out (see abi_layout.h). The fields of a
 * struct are listed in declaration order; a field added by a later minor
 * is listed under that minor's #if.
 */
#include <rlmcp/plugin.h>

#include "abi_layout.h"

#define ABI_CAT2(a, b) a##b
#define ABI_CAT(a, b) ABI_CAT2(a, b)
#ifdef FX_TODAY
#define ABI_FN abi_layout_today
#else
#define ABI_FN ABI_CAT(abi_layout_1_, FX_MINOR)
#if RLMCP_ABI_MINOR != FX_MINOR
#error "abi_layout must build against the frozen header of its minor"
#endif
#endif

#define S(t)                                                                   \
    {                                                                          \
#t, NULL, 0, sizeof(struct t)                                          \
    }
#define F(t, f)                                                                \
    {                                                                          \
#t, #f, offsetof(struct t, f), sizeof(((struct t *)0)->f)              \
    }

static const struct abi_field rows[] = {
    S(rlmcp_plugin_desc),
    F(rlmcp_plugin_desc, abi_major),
    F(rlmcp_plugin_desc, abi_minor),
    F(rlmcp_plugin_desc, struct_size),
    F(rlmcp_plugin_desc, name),
    F(rlmcp_plugin_desc, version),
    F(rlmcp_plugin_desc, description),
    F(rlmcp_plugin_desc, init),
    F(rlmcp_plugin_desc, shutdown),
#if RLMCP_ABI_MINOR >= 5
    F(rlmcp_plugin_desc, config_schema),
#endif

    S(rlmcp_tool_def),
    F(rlmcp_tool_def, struct_size),
    F(rlmcp_tool_def, name),
    F(rlmcp_tool_def, title),
    F(rlmcp_tool_def, description),
    F(rlmcp_tool_def, input_schema_json),
    F(rlmcp_tool_def, output_schema_json),
    F(rlmcp_tool_def, annotations_json),
    F(rlmcp_tool_def, flags),
    F(rlmcp_tool_def, timeout_ms),
    F(rlmcp_tool_def, handler),
    F(rlmcp_tool_def, user_data),
    F(rlmcp_tool_def, user_data_free),
#if RLMCP_ABI_MINOR >= 4
    F(rlmcp_tool_def, task),
#endif
#if RLMCP_ABI_MINOR >= 5
    F(rlmcp_tool_def, timeout_arg),
#endif

#if RLMCP_ABI_MINOR >= 4
    S(rlmcp_task_def),
    F(rlmcp_task_def, struct_size),
    F(rlmcp_task_def, start),
    F(rlmcp_task_def, get),
    F(rlmcp_task_def, wait),
    F(rlmcp_task_def, cancel),
#endif
#if RLMCP_ABI_MINOR >= 5
    F(rlmcp_task_def, update),
    F(rlmcp_task_def, flags),
#endif

    S(rlmcp_resource_def),
    F(rlmcp_resource_def, struct_size),
    F(rlmcp_resource_def, uri),
    F(rlmcp_resource_def, uri_template),
    F(rlmcp_resource_def, name),
    F(rlmcp_resource_def, title),
    F(rlmcp_resource_def, description),
    F(rlmcp_resource_def, mime_type),
    F(rlmcp_resource_def, flags),
    F(rlmcp_resource_def, read),
    F(rlmcp_resource_def, user_data),
    F(rlmcp_resource_def, user_data_free),

    S(rlmcp_prompt_def),
    F(rlmcp_prompt_def, struct_size),
    F(rlmcp_prompt_def, name),
    F(rlmcp_prompt_def, title),
    F(rlmcp_prompt_def, description),
    F(rlmcp_prompt_def, arguments_json),
    F(rlmcp_prompt_def, get),
    F(rlmcp_prompt_def, user_data),
    F(rlmcp_prompt_def, user_data_free),

    S(rlmcp_http_part),
    F(rlmcp_http_part, struct_size),
    F(rlmcp_http_part, name),
    F(rlmcp_http_part, filename),
    F(rlmcp_http_part, content_type),
    F(rlmcp_http_part, data),
    F(rlmcp_http_part, len),

    S(rlmcp_http_req),
    F(rlmcp_http_req, struct_size),
    F(rlmcp_http_req, method),
    F(rlmcp_http_req, path),
    F(rlmcp_http_req, body),
    F(rlmcp_http_req, body_len),
    F(rlmcp_http_req, accept),
    F(rlmcp_http_req, parts),
    F(rlmcp_http_req, n_parts),
    F(rlmcp_http_req, timeout_ms),
    F(rlmcp_http_req, max_retries),
    F(rlmcp_http_req, max_body),
    F(rlmcp_http_req, flags),

    S(rlmcp_http_resp),
    F(rlmcp_http_resp, struct_size),
    F(rlmcp_http_resp, status),
    F(rlmcp_http_resp, content_type),
    F(rlmcp_http_resp, body),
    F(rlmcp_http_resp, body_len),
    F(rlmcp_http_resp, truncated),

#if RLMCP_ABI_MINOR >= 1
    S(rlmcp_tunnel),
    F(rlmcp_tunnel, struct_size),
    F(rlmcp_tunnel, tunnel_key),
    F(rlmcp_tunnel, auth_token),
    F(rlmcp_tunnel, port),

    S(rlmcp_pty_exchange),
    F(rlmcp_pty_exchange, struct_size),
    F(rlmcp_pty_exchange, connect_url),
    F(rlmcp_pty_exchange, input),
    F(rlmcp_pty_exchange, input_len),
    F(rlmcp_pty_exchange, quiet_ms),
    F(rlmcp_pty_exchange, max_wait_ms),
    F(rlmcp_pty_exchange, on_output),
    F(rlmcp_pty_exchange, user),
    F(rlmcp_pty_exchange, upgrade_status),
    F(rlmcp_pty_exchange, close_code),
    F(rlmcp_pty_exchange, quiet),
#endif

#if RLMCP_ABI_MINOR >= 6
    S(rlmcp_ws_open),
    F(rlmcp_ws_open, struct_size),
    F(rlmcp_ws_open, path),
    F(rlmcp_ws_open, subprotocol),
    F(rlmcp_ws_open, max_message),
    F(rlmcp_ws_open, connect_timeout_ms),
    F(rlmcp_ws_open, upgrade_status),

    S(rlmcp_ws_message),
    F(rlmcp_ws_message, struct_size),
    F(rlmcp_ws_message, type),
    F(rlmcp_ws_message, data),
    F(rlmcp_ws_message, len),
    F(rlmcp_ws_message, close_code),
#endif

    S(rlmcp_host_api),
    F(rlmcp_host_api, size),
    F(rlmcp_host_api, abi_major),
    F(rlmcp_host_api, abi_minor),
    F(rlmcp_host_api, host_version),
    F(rlmcp_host_api, register_tool),
    F(rlmcp_host_api, register_resource),
    F(rlmcp_host_api, register_prompt),
    F(rlmcp_host_api, set_error),
    F(rlmcp_host_api, config_json),
    F(rlmcp_host_api, log),
    F(rlmcp_host_api, vlog),
    F(rlmcp_host_api, alloc),
    F(rlmcp_host_api, calloc),
    F(rlmcp_host_api, strdup),
    F(rlmcp_host_api, free),
    F(rlmcp_host_api, strerror),
    F(rlmcp_host_api, result_text),
    F(rlmcp_host_api, result_content),
    F(rlmcp_host_api, result_json),
    F(rlmcp_host_api, result_error),
    F(rlmcp_host_api, progress),
    F(rlmcp_host_api, is_cancelled),
    F(rlmcp_host_api, sleep_ms),
    F(rlmcp_host_api, call_log),
    F(rlmcp_host_api, runloop_request),
    F(rlmcp_host_api, http_resp_free),
    F(rlmcp_host_api, runloop_sse),
    F(rlmcp_host_api, client_request),
    F(rlmcp_host_api, resource_contents),
    F(rlmcp_host_api, prompt_message),
    F(rlmcp_host_api, call_plugin),
#if RLMCP_ABI_MINOR >= 1
    F(rlmcp_host_api, runloop_tunnel_request),
    F(rlmcp_host_api, runloop_pty_exchange),
#endif
#if RLMCP_ABI_MINOR >= 2
    F(rlmcp_host_api, call_deadline_ms),
    F(rlmcp_host_api, call_last_error),
#endif
#if RLMCP_ABI_MINOR >= 3
    F(rlmcp_host_api, exposed_tool_name),
    F(rlmcp_host_api, exposed_param_name),
#endif
#if RLMCP_ABI_MINOR >= 6
    F(rlmcp_host_api, runloop_ws_open),
    F(rlmcp_host_api, runloop_ws_send),
    F(rlmcp_host_api, runloop_ws_recv),
    F(rlmcp_host_api, runloop_ws_close),
#endif
};

static const struct abi_layout layout = {
    .minor = RLMCP_ABI_MINOR,
    .rows = rows,
    .n_rows = sizeof(rows) / sizeof(rows[0]),
    /* Everything after host_version is a service pointer. */
    .n_services = (sizeof(struct rlmcp_host_api) -
                   offsetof(struct rlmcp_host_api, register_tool)) /
                  sizeof(void (*)(void)),
};

const struct abi_layout *ABI_FN(void)
{
    return &layout;
}
