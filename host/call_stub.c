/*
 * call_stub.c - stand-ins for the call-scope services until host/call.c
 * (the dispatcher's) exists: each answers RLMCP_ENOTSUP. The whole file
 * compiles to nothing once call.c is there.
 */
#if !__has_include("call.c")

#include <stdarg.h>

#include "call.h"

int call_result_text(rlmcp_call *call, const char *text)
{
    return RLMCP_ENOTSUP;
}
int call_result_content(rlmcp_call *call, const char *json, size_t len)
{
    return RLMCP_ENOTSUP;
}
int call_result_json(rlmcp_call *call, const char *json, size_t len)
{
    return RLMCP_ENOTSUP;
}
int call_result_error(rlmcp_call *call, const char *code, const char *remedy,
                      const char *fmt, ...)
{
    return RLMCP_ENOTSUP;
}
int call_progress(rlmcp_call *call, double progress, double total,
                  const char *message)
{
    return RLMCP_ENOTSUP;
}
bool call_is_cancelled(rlmcp_call *call)
{
    return false;
}
int call_sleep_ms(rlmcp_call *call, uint32_t ms)
{
    return RLMCP_ENOTSUP;
}
void call_log(rlmcp_call *call, int level, const char *fmt, ...)
{
}
int call_runloop_request(rlmcp_call *call, const struct rlmcp_http_req *req,
                         struct rlmcp_http_resp **resp_out)
{
    return RLMCP_ENOTSUP;
}
void call_http_resp_free(struct rlmcp_http_resp *resp)
{
}
int call_runloop_sse(rlmcp_call *call, const struct rlmcp_http_req *req,
                     rlmcp_sse_fn on_event, void *user, long *status_out)
{
    return RLMCP_ENOTSUP;
}
int call_client_request(rlmcp_call *call, const char *method,
                        const char *params_json, uint32_t timeout_ms,
                        char **result_out)
{
    return RLMCP_ENOTSUP;
}
int call_resource_contents(rlmcp_call *call, const char *uri,
                           const char *mime_type, const void *data,
                           size_t len, bool is_blob)
{
    return RLMCP_ENOTSUP;
}
int call_prompt_message(rlmcp_call *call, const char *role,
                        const char *content_json)
{
    return RLMCP_ENOTSUP;
}
rlmcp_plugin *call_plugin(rlmcp_call *call)
{
    return NULL;
}

#else
/* ISO C forbids an empty translation unit. */
typedef int call_stub_unused_;
#endif
