/*
 * intake.c - how a transport reads a message before handing it over
 * (intake.h): the method names and revision rules stdio and HTTP share.
 */
#define _GNU_SOURCE
#include "intake.h"

#include <stdio.h>
#include <string.h>

#include "jsonrpc.h"
#include "mcp.h"
#include "revision.h"

static bool is(const char *method, const char *name)
{
    return method != NULL && strcmp(method, name) == 0;
}

/* Methods whose handlers may talk to the client before they answer. */
static bool streams(const char *method, bool stateless)
{
    if (stateless && is(method, "subscriptions/listen"))
        return true; /* 2025-11-25 answers it -32601, as JSON */
    if (!stateless && is(method, "tasks/result"))
        return true; /* asks what the task waits for (tasks_input.c) */
    return is(method, "tools/call") || is(method, "resources/read") ||
           is(method, "prompts/get");
}

static bool read_stateless(const char *method, const cJSON *params,
                           const struct intake_headers *h,
                           enum intake_session s)
{
    const char *version = rev_meta_version(params);

    if (method == NULL)
        return false;
    switch (s) {
    case INTAKE_NO_SESSION:
        /* initialize too: in 2026-07-28 it is a removed method. */
        return (h != NULL && rev_is_stateless(h->version)) || version != NULL;
    case INTAKE_SESSION_OPEN:
        return rev_is_stateless(version);
    case INTAKE_SESSION_NAMED:
    default:
        return false;
    }
}

void intake_read(const cJSON *msg, const struct intake_headers *h,
                 enum intake_session s, struct intake *in)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");

    memset(in, 0, sizeof(*in));
    in->method = cJSON_IsString(m) ? m->valuestring : NULL;
    in->id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    in->initialize = is(in->method, "initialize");
    in->stateless = read_stateless(in->method, params, h, s);
    in->streams = in->id != NULL && streams(in->method, in->stateless);
    in->listen = in->stateless && in->id != NULL &&
                 is(in->method, "subscriptions/listen");
    in->cancel = in->id == NULL && is(in->method, "notifications/cancelled");
}

/* "2025-11-25, 2025-06-18 and 2025-03-26": the session-based revisions. */
static void session_versions(char *buf, size_t len)
{
    const char *sep = NULL;
    size_t used = 0;
    size_t i = 0;
    int n = 0;

    buf[0] = '\0';
    for (i = 0; i < rev_n_supported && used < len; i++) {
        if (rev_is_stateless(rev_supported[i]))
            continue;
        sep = ", ";
        if (used == 0)
            sep = "";
        else if (i + 1 == rev_n_supported)
            sep = " and ";
        n = snprintf(buf + used, len - used, "%s%s", sep, rev_supported[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int intake_check(const cJSON *msg, const struct intake_headers *h,
                 const struct intake *in, char *err, size_t errlen,
                 cJSON **data)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const char *version = h != NULL ? h->version : NULL;
    struct rev_meta meta;
    char versions[128];
    int code = 0;
    int hcode = 0;

    *data = NULL;
    if (!in->stateless) {
        if (version == NULL || mcp_protocol_version_supported(version))
            return 0;
        session_versions(versions, sizeof(versions));
        snprintf(err, errlen,
                 "unsupported MCP-Protocol-Version '%.40s'; this server "
                 "speaks %s after initialize, and %s per request (with "
                 "params._meta)",
                 version, versions, MCP_REV_STATELESS);
        return JSONRPC_SERVER_ERROR;
    }
    if (in->id == NULL)
        return 0; /* a notification: nobody to refuse it to */
    code = rev_meta_check(params, &meta, err, errlen, data);
    if (code == JSONRPC_INVALID_PARAMS)
        return code;
    if (h != NULL)
        hcode = rev_header_check(in->method, params, h->version, h->method,
                                 h->name, err, errlen);
    if (hcode != 0) {
        cJSON_Delete(*data);
        *data = NULL;
        return hcode;
    }
    if (code != 0)
        snprintf(err, errlen,
                 "unsupported protocol version in "
                 "params._meta; pick one of error.data."
                 "supported");
    return code;
}

int intake_listen_admit(unsigned open, char *err, size_t errlen)
{
    if (open < INTAKE_LISTENS_PER_CLIENT)
        return 0;
    snprintf(err, errlen,
             "Too Many Requests: this client already has %u "
             "subscriptions/listen streams open; one stream can carry every "
             "notification type, close one and retry",
             INTAKE_LISTENS_PER_CLIENT);
    return JSONRPC_SERVER_ERROR;
}
