/*
 * intake.c - how a transport reads a message before handing it over
 * (intake.h): the method names and revision rules stdio and HTTP share.
 */
#define _GNU_SOURCE
#include "intake.h"

#include <stdio.h>
#include <stdlib.h>
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

void intake_mark_stateless(struct mcp_request_ctx *ctx)
{
    ctx->revision = MCP_REV_STATELESS;
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

int intake_check_version(const char *version, char *err, size_t errlen)
{
    char versions[128];

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

int intake_check(const cJSON *msg, const struct intake_headers *h,
                 const struct intake *in, char *err, size_t errlen,
                 cJSON **data)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const char *version = h != NULL ? h->version : NULL;
    struct rev_meta meta;
    int code = 0;
    int hcode = 0;

    *data = NULL;
    if (!in->stateless)
        return intake_check_version(version, err, errlen);
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

/* The session-not-found code of the Streamable HTTP transport. */
#define INTAKE_SESSION_NOT_FOUND (-32001)

char *intake_refusal_code(int code, const cJSON *id, const char *message,
                          const cJSON *data)
{
    return jsonrpc_error(id, code, message, data);
}

char *intake_refusal(enum intake_refusal why, const cJSON *id,
                     const char *message)
{
    int code = JSONRPC_SERVER_ERROR;

    switch (why) {
    case INTAKE_REFUSE_NO_SESSION:
        code = INTAKE_SESSION_NOT_FOUND;
        break;
    case INTAKE_REFUSE_PARSE:
        code = JSONRPC_PARSE_ERROR;
        break;
    case INTAKE_REFUSE_INVALID:
        code = JSONRPC_INVALID_REQUEST;
        break;
    case INTAKE_REFUSE_PARAMS:
        code = JSONRPC_INVALID_PARAMS;
        break;
    case INTAKE_REFUSE_INTERNAL:
        code = JSONRPC_INTERNAL_ERROR;
        break;
    case INTAKE_REFUSE_SERVER:
    default:
        break;
    }
    return jsonrpc_error(id, code, message, NULL);
}

bool intake_parse(const char *buf, size_t len, struct intake_parsed *p)
{
    struct jsonrpc_msg m;
    int code = 0;

    memset(p, 0, sizeof(*p));
    code = jsonrpc_parse(buf, len, &m, &p->id, p->err, sizeof(p->err));
    if (code == 0) {
        p->msg = m.root; /* the caller reads the fields it needs */
        return true;
    }
    p->notification = m.kind == JSONRPC_NOTIFICATION;
    jsonrpc_msg_free(&m);
    switch (code) {
    case JSONRPC_PARSE_ERROR:
        p->why = INTAKE_REFUSE_PARSE;
        break;
    case JSONRPC_INVALID_PARAMS:
        p->why = INTAKE_REFUSE_PARAMS;
        break;
    case JSONRPC_INVALID_REQUEST:
    default:
        p->why = INTAKE_REFUSE_INVALID;
        break;
    }
    return false;
}

char *intake_parsed_refusal(const struct intake_parsed *p)
{
    return intake_refusal(p->why, p->id, p->err);
}

void intake_parsed_free(struct intake_parsed *p)
{
    if (p == NULL)
        return;
    cJSON_Delete(p->msg);
    cJSON_Delete(p->id);
    memset(p, 0, sizeof(*p));
}

void intake_reply_init(struct intake_reply *r, const struct intake *in)
{
    memset(r, 0, sizeof(*r));
    r->initialize = in->initialize;
    r->stateless = in->stateless;
    if (in->method != NULL)
        snprintf(r->method, sizeof(r->method), "%s", in->method);
}

char *intake_answer(const struct intake_reply *r, const char *json, size_t len)
{
    if (r == NULL || !r->stateless || json == NULL)
        return NULL;
    return rev_adapt_final(json, len, r->method);
}

/* A stateless request's error answer: how its transport carries it. */
static enum intake_status status_of(int code)
{
    switch (code) {
    case JSONRPC_METHOD_NOT_FOUND:
        return INTAKE_STATUS_UNKNOWN;
    case MCP_HEADER_MISMATCH:
    case MCP_MISSING_CLIENT_CAPABILITY:
    case MCP_UNSUPPORTED_VERSION:
    case JSONRPC_PARSE_ERROR:
    case JSONRPC_INVALID_REQUEST:
        return INTAKE_STATUS_MALFORMED;
    default:
        return INTAKE_STATUS_OK;
    }
}

void intake_outcome(const struct intake_reply *r, const char *json, size_t len,
                    struct intake_outcome *out)
{
    cJSON *msg = NULL;
    bool failed = false;

    memset(out, 0, sizeof(*out));
    if (r->initialize) {
        /* The initialize answer: an error ends the session it opened. */
        msg = cJSON_ParseWithLength(json, len);
        failed = msg == NULL || cJSON_GetObjectItem(msg, "error") != NULL;
        cJSON_Delete(msg);
        out->session_created = !failed;
        out->session_refused = failed;
    }
    if (r->stateless)
        out->status = status_of(rev_error_code(json, len));
}

bool intake_line_stateless(const char *line, size_t len, enum intake_session s,
                           struct intake_reply *r)
{
    cJSON *msg = NULL;
    struct intake in;
    bool yes = false;

    /* Most lines are not: look for the key before parsing. */
    if (memmem(line, len, REV_META_VERSION, strlen(REV_META_VERSION)) == NULL)
        return false;
    msg = cJSON_ParseWithLength(line, len);
    if (!cJSON_IsObject(msg))
        goto out;
    intake_read(msg, NULL, s, &in);
    yes = in.stateless && in.id != NULL;
    if (yes)
        intake_reply_init(r, &in);
out:
    cJSON_Delete(msg);
    return yes;
}

bool intake_line_cancel(const char *line, size_t len)
{
    cJSON *msg = NULL;
    struct intake in;

    /* Most lines are not: look for the word before parsing. */
    if (memmem(line, len, "cancelled", 9) == NULL)
        return false;
    msg = cJSON_ParseWithLength(line, len);
    intake_read(msg, NULL, INTAKE_SESSION_OPEN, &in);
    cJSON_Delete(msg);
    return in.cancel;
}
