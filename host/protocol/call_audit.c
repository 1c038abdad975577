/*
 * call_audit.c - metrics and the audit line of each tools/call (see
 * call_audit.h, metrics.h, audit.h).
 */
#include "call_audit.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "audit.h"
#include "call_state.h"
#include "dispatch.h"
#include "metrics.h"

uint64_t call_account_begin(struct rlmcp_call *c)
{
    if (c->kind == CALL_TOOL)
        metrics_call_begin();
    return deadline_now_ns();
}

static const char *string_item(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

    return cJSON_IsString(v) && v->valuestring[0] != '\0' ? v->valuestring
                                                          : NULL;
}

void call_note_devbox(struct rlmcp_call *c, const cJSON *structured)
{
    const char *id = string_item(structured, "devbox_id");

    if (id == NULL) {
        id = string_item(structured, "id");
        if (id != NULL && strncmp(id, "dbx_", 4) != 0)
            id = NULL;
    }
    if (id == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    snprintf(c->devbox_id, sizeof(c->devbox_id), "%s", id);
    pthread_mutex_unlock(&c->lock);
}

/* The devbox the arguments name, copied into out. */
static void devbox_from_args(const struct rlmcp_call *c, char *out, size_t n)
{
    cJSON *args = cJSON_ParseWithLength(c->args_json, c->args_len);
    const char *id = string_item(args, "devbox_id");

    if (id == NULL)
        id = string_item(args, "id");
    if (id != NULL)
        snprintf(out, n, "%s", id);
    cJSON_Delete(args);
}

static const char *outcome_of(struct rlmcp_call *c, int rc, const char **code)
{
    enum cancel_reason reason = CANCEL_NONE;
    bool is_error = false;

    pthread_mutex_lock(&c->lock);
    reason = c->reason;
    is_error = c->is_error;
    *code = c->err_code[0] != '\0' ? c->err_code : NULL;
    pthread_mutex_unlock(&c->lock);
    switch (reason) {
    case CANCEL_CLIENT:
        return "cancelled";
    case CANCEL_TIMEOUT:
        return "timeout";
    case CANCEL_SHUTDOWN:
        return "shutdown";
    default:
        break;
    }
    if (rc < 0)
        return "internal";
    return is_error ? "error" : "ok";
}

void call_account_end(struct rlmcp_call *c, int rc, uint64_t start_ns)
{
    struct audit_entry e;
    char devbox[64] = "";
    const char *code = NULL;
    const char *outcome = NULL;
    double ms = (double)(deadline_now_ns() - start_ns) / 1e6;

    if (c->kind != CALL_TOOL)
        return;
    outcome = outcome_of(c, rc, &code);
    metrics_call_end(c->what, outcome, code, ms / 1000.0);
    if (!audit_enabled())
        return;
    pthread_mutex_lock(&c->lock);
    snprintf(devbox, sizeof(devbox), "%s", c->devbox_id);
    pthread_mutex_unlock(&c->lock);
    if (devbox[0] == '\0' && c->args_json != NULL)
        devbox_from_args(c, devbox, sizeof(devbox));
    memset(&e, 0, sizeof(e));
    e.api_key = c->api_key != NULL ? c->api_key : mcp_default_key(c->d);
    e.session = mcp_session_label(c->s);
    if (e.session[0] == '\0')
        e.session = "stdio";
    e.tool = c->what;
    e.args = c->args_json;
    e.args_len = c->args_len;
    e.outcome = outcome;
    e.code = code;
    e.duration_ms = ms;
    e.devbox_id = devbox[0] != '\0' ? devbox : NULL;
    audit_record(&e);
}
