/*
 * services.c - the host services table (struct rlmcp_host_api).
 *
 * The table is static const: plugins cannot change it and every plugin
 * sees the same one. Plugin-scope services find their plugin through the
 * handle (loader.h); call-scope services are the dispatcher's (call.h).
 */
#define _GNU_SOURCE /* asprintf, vasprintf */
#include "services.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "loader.h"
#include "log.h"
#include "registry.h"
#include "textmap.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif

static const char *plugin_name(struct loaded_plugin *lp)
{
    return lp != NULL && lp->name != NULL ? lp->name : "?";
}

/* Common part of register_*: a live plugin inside its init. */
static int check_phase(struct loaded_plugin *lp, const char *what)
{
    if (lp == NULL)
        return RLMCP_EINVAL;
    if (!lp->in_init) {
        log_msg(RLMCP_LOG_ERROR, plugin_name(lp),
                "%s called outside init; register everything from init()",
                what);
        return RLMCP_ESTATE;
    }
    return RLMCP_OK;
}

static void report(struct loaded_plugin *lp, int rc, const char *err)
{
    if (rc != RLMCP_OK)
        log_msg(RLMCP_LOG_ERROR, plugin_name(lp), "%s (%s)", err,
                services_strerror(rc));
}

static int svc_register_tool(rlmcp_plugin *self,
                             const struct rlmcp_tool_def *def)
{
    struct loaded_plugin *lp = loader_from_handle(self);
    char err[512] = "";
    int rc = check_phase(lp, "register_tool");

    if (rc != RLMCP_OK)
        return rc;
    rc = registry_add_tool(lp->reg, lp, lp->name, def, err, sizeof(err));
    report(lp, rc, err);
    return rc;
}

static int svc_register_resource(rlmcp_plugin *self,
                                 const struct rlmcp_resource_def *def)
{
    struct loaded_plugin *lp = loader_from_handle(self);
    char err[512] = "";
    int rc = check_phase(lp, "register_resource");

    if (rc != RLMCP_OK)
        return rc;
    rc = registry_add_resource(lp->reg, lp, def, err, sizeof(err));
    report(lp, rc, err);
    return rc;
}

static int svc_register_prompt(rlmcp_plugin *self,
                               const struct rlmcp_prompt_def *def)
{
    struct loaded_plugin *lp = loader_from_handle(self);
    char err[512] = "";
    int rc = check_phase(lp, "register_prompt");

    if (rc != RLMCP_OK)
        return rc;
    rc = registry_add_prompt(lp->reg, lp, def, err, sizeof(err));
    report(lp, rc, err);
    return rc;
}

static void svc_set_error(rlmcp_plugin *self, const char *fmt, ...)
    RLMCP_PRINTF(2, 3);
static void svc_set_error(rlmcp_plugin *self, const char *fmt, ...)
{
    struct loaded_plugin *lp = loader_from_handle(self);
    char *text = NULL;
    va_list ap;

    if (lp == NULL || fmt == NULL)
        return;
    if (!lp->in_init) {
        log_msg(RLMCP_LOG_WARNING, plugin_name(lp),
                "set_error called outside init; ignored");
        return;
    }
    va_start(ap, fmt);
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    if (text == NULL)
        return;
    free(lp->init_error);
    lp->init_error = text;
}

static const char *svc_config_json(rlmcp_plugin *self, size_t *len_out)
{
    struct loaded_plugin *lp = loader_from_handle(self);
    const char *json = "{}";

    if (lp != NULL && lp->config_json != NULL)
        json = lp->config_json;
    if (len_out != NULL)
        *len_out = lp != NULL && lp->config_json != NULL ? lp->config_len
                                                         : strlen(json);
    return json;
}

static void svc_vlog(rlmcp_plugin *self, int level, const char *fmt, va_list ap)
    RLMCP_PRINTF(3, 0);
static void svc_vlog(rlmcp_plugin *self, int level, const char *fmt, va_list ap)
{
    struct loaded_plugin *lp = loader_from_handle(self);

    if (fmt == NULL)
        return;
    if (level < RLMCP_LOG_DEBUG)
        level = RLMCP_LOG_DEBUG;
    if (level > RLMCP_LOG_EMERGENCY)
        level = RLMCP_LOG_EMERGENCY;
    log_vmsg(level, plugin_name(lp), fmt, ap);
}

static void svc_log(rlmcp_plugin *self, int level, const char *fmt, ...)
    RLMCP_PRINTF(3, 4);
static void svc_log(rlmcp_plugin *self, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    svc_vlog(self, level, fmt, ap);
    va_end(ap);
}

static void *svc_alloc(size_t n)
{
    return malloc(n ? n : 1);
}

static void *svc_calloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size ? size : 1);
}

static char *svc_strdup(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

static void svc_free(void *p)
{
    free(p);
}

const char *services_strerror(int code)
{
    switch (code) {
    case RLMCP_OK:
        return "success";
    case RLMCP_EINVAL:
        return "invalid argument";
    case RLMCP_ENOMEM:
        return "out of memory";
    case RLMCP_ESTATE:
        return "not allowed in this phase";
    case RLMCP_ENOTFOUND:
        return "not found";
    case RLMCP_ECANCELLED:
        return "cancelled";
    case RLMCP_ETIMEDOUT:
        return "timed out";
    case RLMCP_EHTTP:
        return "HTTP transport failure";
    case RLMCP_EVERSION:
        return "version not understood";
    case RLMCP_ENOTSUP:
        return "not supported";
    case RLMCP_EEXIST:
        return "name already taken";
    case RLMCP_EINTERNAL:
        return "internal error";
    case RLMCP_ETOOBIG:
        return "message too big";
    default:
        return "unknown error";
    }
}

static const struct rlmcp_host_api table = {
    .size = sizeof(struct rlmcp_host_api),
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_ABI_MINOR,
    .host_version = RLMCP_VERSION,
    .register_tool = svc_register_tool,
    .register_resource = svc_register_resource,
    .register_prompt = svc_register_prompt,
    .set_error = svc_set_error,
    .config_json = svc_config_json,
    .log = svc_log,
    .vlog = svc_vlog,
    .alloc = svc_alloc,
    .calloc = svc_calloc,
    .strdup = svc_strdup,
    .free = svc_free,
    .strerror = services_strerror,
    .result_text = call_result_text,
    .result_content = call_result_content,
    .result_json = call_result_json,
    .result_error = call_result_error,
    .progress = call_progress,
    .is_cancelled = call_is_cancelled,
    .sleep_ms = call_sleep_ms,
    .call_log = call_log,
    .runloop_request = call_runloop_request,
    .http_resp_free = call_http_resp_free,
    .runloop_sse = call_runloop_sse,
    .client_request = call_client_request,
    .resource_contents = call_resource_contents,
    .prompt_message = call_prompt_message,
    .call_plugin = call_plugin,
    /* ABI 1.1 */
    .runloop_tunnel_request = call_runloop_tunnel_request,
    .runloop_pty_exchange = call_runloop_pty_exchange,
    /* ABI 1.2 */
    .call_deadline_ms = call_deadline_ms,
    .call_last_error = call_last_error,
    /* ABI 1.3 */
    .exposed_tool_name = call_exposed_tool_name,
    .exposed_param_name = call_exposed_param_name,
    /* ABI 1.6 */
    .runloop_ws_open = call_runloop_ws_open,
    .runloop_ws_send = call_runloop_ws_send,
    .runloop_ws_recv = call_runloop_ws_recv,
    .runloop_ws_close = call_runloop_ws_close,
};

const struct rlmcp_host_api *services_table(void)
{
    return &table;
}
