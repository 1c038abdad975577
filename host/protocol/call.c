/*
 * call.c - one tools/call, resources/read or prompts/get in progress, and
 * the call-scope host services plugins use while its handler runs.
 */
#define _GNU_SOURCE /* vasprintf */
#include "call.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "call_audit.h"
#include "deadline.h"
#include "dlist.h"
#include "jsonrpc.h"
#include "loader.h"
#include "log.h"
#include "call_state.h"
#include "dispatch.h"
#include "mrtr.h"
#include "rlclient.h"
#include "ws.h"

#include "schema.h"
#include "secret.h"
#include "services.h"
#include "textmap.h"

/* Requests end this long before the call's deadline, so the handler can
 * still answer with what it knows before the timer answers "timeout". */
#define CALL_ANSWER_MARGIN_MS 150u

/* Progress closer together than this is coalesced: the latest value wins,
 * the messages are joined (output chunks are not lost). */
#define PROGRESS_COALESCE_NS (20ull * 1000 * 1000)
/* A held-back message goes out at once rather than grow past this. */
#define PROGRESS_JOIN_MAX (64u * 1024u)

/* ---- life cycle --------------------------------------------------------- */

struct rlmcp_call *call_new(struct mcp_dispatcher *d, struct deployment *dep,
                            struct mcp_session *s, struct mcp_sink *sink,
                            enum call_kind kind, const cJSON *id,
                            const char *api_key)
{
    struct rlmcp_call *c = calloc(1, sizeof(*c));
    pthread_condattr_t attr;

    if (c == NULL)
        return NULL;
    atomic_init(&c->refs, 1);
    atomic_init(&c->cancelled, false);
    atomic_init(&c->progress_due_ns, 0);
    c->d = d;
    c->kind = kind;
    c->id = cJSON_Duplicate(id, false);
    c->id_key = c->id != NULL ? jsonrpc_id_key(c->id) : NULL;
    c->items = cJSON_CreateArray();
    if (api_key != NULL)
        c->api_key = strdup(api_key);
    if (c->id == NULL || c->id_key == NULL || c->items == NULL ||
        (api_key != NULL && c->api_key == NULL)) {
        cJSON_Delete(c->id);
        free(c->id_key);
        cJSON_Delete(c->items);
        free(c->api_key);
        free(c);
        return NULL;
    }
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&c->send_lock, NULL);
    c->dep = dep;
    deployment_ref(dep);
    c->s = s;
    mcp_session_ref(s);
    c->sink = sink;
    if (sink->retain != NULL)
        sink->retain(sink);
    return c;
}

void call_set_tool(struct rlmcp_call *c, const struct tool_entry *t, char *args,
                   size_t len, struct mrtr *mr)
{
    c->mrtr = mr;
    c->tool = t;
    c->what = t->name;
    c->plugin = t->plugin;
    c->plugin_name = t->plugin_name;
    c->args_json = args;
    c->args_len = len;
}

void call_ref(struct rlmcp_call *c)
{
    atomic_fetch_add(&c->refs, 1);
}

void call_unref(struct rlmcp_call *c)
{
    if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    if (c->sink->release != NULL)
        c->sink->release(c->sink);
    mcp_session_unref(c->s);
    deployment_unref(c->dep); /* may unload a retired deployment's plugins */
    cJSON_Delete(c->id);
    free(c->id_key);
    cJSON_Delete(c->progress_token);
    free(c->args_json);
    free(c->uri);
    secret_free(c->api_key);
    cJSON_Delete(c->items);
    cJSON_Delete(c->structured);
    cJSON_Delete(c->err_obj);
    free(c->pend_message);
    mrtr_free(c->mrtr);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->send_lock);
    free(c);
}

/* ---- sending ------------------------------------------------------------ */

static void send_progress_locked(struct rlmcp_call *c, double progress,
                                 double total, const char *message)
{
    cJSON *p = cJSON_CreateObject();
    char *json = NULL;

    if (p == NULL)
        return;
    cJSON_AddItemToObject(p, "progressToken",
                          cJSON_Duplicate(c->progress_token, false));
    cJSON_AddNumberToObject(p, "progress", progress);
    if (total >= 0)
        cJSON_AddNumberToObject(p, "total", total);
    if (message != NULL)
        cJSON_AddStringToObject(p, "message", message);
    json = jsonrpc_notification("notifications/progress", p);
    if (json != NULL)
        c->sink->send(c->sink, json, strlen(json), false);
    free(json);
}

/* Send a coalesced progress update still held back. send_lock held. */
static void flush_progress_locked(struct rlmcp_call *c)
{
    if (!c->progress_pending || c->responded)
        return;
    c->progress_pending = false;
    atomic_store(&c->progress_due_ns, 0);
    c->progress_sent_ns = deadline_now_ns();
    send_progress_locked(c, c->pend_progress, c->pend_total, c->pend_message);
    free(c->pend_message);
    c->pend_message = NULL;
}

static void flush_progress(struct rlmcp_call *c)
{
    pthread_mutex_lock(&c->send_lock);
    flush_progress_locked(c);
    pthread_mutex_unlock(&c->send_lock);
}

void call_flush_progress_due(struct rlmcp_call *c)
{
    uint64_t now = 0;

    pthread_mutex_lock(&c->send_lock);
    now = deadline_now_ns();
    if (!c->progress_pending || c->responded)
        atomic_store(&c->progress_due_ns, 0); /* nothing left to send */
    else if (now >= c->progress_sent_ns + PROGRESS_COALESCE_NS)
        flush_progress_locked(c);
    else
        atomic_store(&c->progress_due_ns,
                     c->progress_sent_ns + PROGRESS_COALESCE_NS);
    pthread_mutex_unlock(&c->send_lock);
}

/* held followed by next (either may be NULL), malloc'd; NULL for none. */
static char *join_messages(char *held, char *next)
{
    char *both = NULL;
    size_t a = 0, b = 0;

    if (held == NULL)
        return next;
    if (next == NULL)
        return held;
    a = strlen(held);
    b = strlen(next);
    both = realloc(held, a + b + 1);
    if (both == NULL) {
        free(next); /* out of memory: the held text is kept */
        return held;
    }
    memcpy(both + a, next, b + 1);
    free(next);
    return both;
}

bool call_send(struct rlmcp_call *c, const char *json, bool final)
{
    bool sent = false;

    /* Once answered, the request id is free for the client to use again
     * (JSON-RPC ids are unique among requests in progress), even while a
     * timed-out handler is still winding down. */
    if (final)
        mcp_unlink_call_session(c);
    pthread_mutex_lock(&c->send_lock);
    if (c->responded)
        goto out;
    if (final) {
        /* Progress belongs before the answer (clients drop it after). */
        if (json != NULL)
            flush_progress_locked(c);
        c->responded = true;
    }
    c->sink->send(c->sink, json, json != NULL ? strlen(json) : 0, final);
    sent = true;
out:
    pthread_mutex_unlock(&c->send_lock);
    return sent;
}

void call_fail(struct rlmcp_call *c, int code, const char *message)
{
    char *json = jsonrpc_error(c->id, code, message, NULL);

    call_send(c, json, true);
    free(json);
}

/* {"code":code,"message":message,"remedy":remedy} (remedy may be NULL). */
static cJSON *error_object(const char *code, const char *message,
                           const char *remedy)
{
    cJSON *e = cJSON_CreateObject();

    if (e == NULL || cJSON_AddStringToObject(e, "code", code) == NULL ||
        cJSON_AddStringToObject(e, "message", message) == NULL ||
        (remedy != NULL &&
         cJSON_AddStringToObject(e, "remedy", remedy) == NULL)) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

/* The text block {"type":"text","text":"{\"error\":{...}}"} of an error. */
static cJSON *error_block_of(const cJSON *err)
{
    cJSON *outer = cJSON_CreateObject();
    cJSON *block = NULL;
    char *text = NULL;

    if (outer == NULL || err == NULL ||
        !cJSON_AddItemToObject(outer, "error", cJSON_Duplicate(err, true))) {
        cJSON_Delete(outer);
        return NULL;
    }
    text = cJSON_PrintUnformatted(outer);
    cJSON_Delete(outer);
    if (text == NULL)
        return NULL;
    block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "text");
    cJSON_AddStringToObject(block, "text", text);
    free(text);
    return block;
}

/*
 * An error result's structuredContent: {"error": err} and the members of
 * the object the tool set with result_json after its result_error (e.g.
 * exec's "result" of a command that timed out; "error" stays the host's).
 * NULL when the tool's listed outputSchema refuses it (a plugin schema the
 * host could not widen, schema_admit_error): a client that validates it
 * would reject the whole answer, and the text block says the same.
 */
static cJSON *error_structured(const struct tool_entry *t, const cJSON *err,
                               const cJSON *extra)
{
    cJSON *sc = cJSON_CreateObject();
    const cJSON *item = NULL;
    char why[256];
    bool fits;

    if (sc == NULL || err == NULL ||
        !cJSON_AddItemToObject(sc, "error", cJSON_Duplicate(err, true)))
        goto fail;
    cJSON_ArrayForEach(item, extra)
    {
        if (item->string == NULL || strcmp(item->string, "error") == 0)
            continue;
        if (!cJSON_AddItemToObject(sc, item->string,
                                   cJSON_Duplicate(item, true)))
            goto fail;
    }
    fits = t == NULL || t->listed_output_schema == NULL ||
           schema_validate(t->listed_output_schema, sc, "structuredContent",
                           why, sizeof(why)) == 0;
    if (!fits && cJSON_GetArraySize(sc) > 1) {
        /* The extras do not fit (additionalProperties false): the error
         * alone, the text blocks still carry them. */
        while (cJSON_GetArraySize(sc) > 1)
            cJSON_DeleteItemFromArray(sc, 1);
        fits = schema_validate(t->listed_output_schema, sc, "structuredContent",
                               why, sizeof(why)) == 0;
    }
    if (!fits) {
        log_msg(RLMCP_LOG_DEBUG, t->plugin_name,
                "tool '%s': error result without structuredContent, its "
                "outputSchema does not admit it: %s",
                t->name, why);
        goto fail;
    }
    return sc;
fail:
    cJSON_Delete(sc);
    return NULL;
}

/* A whole error answer the host makes itself (no handler result). */
static char *tool_error_answer(const cJSON *id, const struct tool_entry *t,
                               const char *code, const char *message,
                               const char *remedy)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(r, "content");
    cJSON *err = error_object(code, message, remedy);
    cJSON *sc = error_structured(t, err, NULL);

    cJSON_AddItemToArray(content, error_block_of(err));
    if (sc != NULL)
        cJSON_AddItemToObject(r, "structuredContent", sc);
    cJSON_AddBoolToObject(r, "isError", true);
    cJSON_Delete(err);
    return jsonrpc_result(id, r);
}

char *call_tool_error_json(const cJSON *id, const struct tool_entry *tool,
                           const char *code, const char *message,
                           const char *remedy)
{
    return tool_error_answer(id, tool, code, message, remedy);
}

static char *timeout_answer(struct rlmcp_call *c)
{
    char msg[512];

    if (c->kind == CALL_TOOL) {
        snprintf(msg, sizeof(msg),
                 "tool '%s' did not finish within its time limit of %u ms "
                 "and was cancelled",
                 c->what, c->timeout_ms);
        return tool_error_answer(
            c->id, c->tool, "timeout", msg,
            "split the work into shorter steps or run it in the background; "
            "the operator can raise the limit (tool timeout in the "
            "deployment)");
    }
    snprintf(msg, sizeof(msg), "'%s' did not finish within %u ms", c->what,
             c->timeout_ms);
    return jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, msg, NULL);
}

static char *shutdown_answer(struct rlmcp_call *c)
{
    const char *msg = "the server is shutting down; the call was cancelled";

    if (c->kind == CALL_TOOL)
        return tool_error_answer(c->id, c->tool, "unavailable", msg,
                                 "retry once the server is back");
    return jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR, msg, NULL);
}

void call_cancel(struct rlmcp_call *c, enum cancel_reason reason)
{
    char *json = NULL;

    pthread_mutex_lock(&c->lock);
    if (atomic_load(&c->cancelled)) {
        pthread_mutex_unlock(&c->lock);
        return;
    }
    c->reason = reason;
    atomic_store(&c->cancelled, true);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);

    if (reason == CANCEL_CLIENT) {
        /* No response for a cancelled request; the sink may close. */
        call_send(c, NULL, true);
    } else if (reason == CANCEL_TIMEOUT) {
        log_msg(RLMCP_LOG_WARNING, c->plugin_name,
                "'%s' hit its %u ms time limit; cancelled", c->what,
                c->timeout_ms);
        json = timeout_answer(c);
        call_send(c, json, true);
        free(json);
    }
}

/* ---- running ------------------------------------------------------------ */

static int run_handler(struct rlmcp_call *c)
{
    pthread_mutex_t *serial = NULL;
    int rc = RLMCP_EINTERNAL;

    switch (c->kind) {
    case CALL_TOOL:
        if (c->tool->flags & RLMCP_TOOL_SERIAL) {
            /* The entry is shared read-only, except for this lock. */
            serial = &c->tool->serial->lock;
            pthread_mutex_lock(serial);
        }
        if (!atomic_load(&c->cancelled))
            rc = (c->op != NULL ? c->op : c->tool->handler)(
                c, c->args_json, c->args_len, c->tool->user_data);
        else
            rc = RLMCP_ECANCELLED;
        if (serial != NULL)
            pthread_mutex_unlock(serial);
        break;
    case CALL_RESOURCE:
        rc = c->resource->read(c, c->uri, c->resource->user_data);
        break;
    case CALL_PROMPT:
        rc = c->prompt->get(c, c->args_json, c->args_len, c->prompt->user_data);
        break;
    }
    return rc;
}

static cJSON *take(cJSON **slot)
{
    cJSON *v = *slot;

    *slot = NULL;
    return v;
}

/* The structuredContent is due and must match the output schema. */
static bool output_ok(struct rlmcp_call *c, const cJSON *structured)
{
    char err[512];

    if (c->tool->output_schema == NULL)
        return true;
    if (structured == NULL) {
        log_msg(RLMCP_LOG_ERROR, c->plugin_name,
                "tool '%s' declares an outputSchema but returned no "
                "structured result (result_json)",
                c->what);
        return false;
    }
    if (schema_validate(c->tool->output_schema, structured, "structuredContent",
                        err, sizeof(err)) != 0) {
        log_msg(RLMCP_LOG_ERROR, c->plugin_name,
                "tool '%s' returned a structured result that does not match "
                "its outputSchema: %s",
                c->what, err);
        return false;
    }
    return true;
}

static char *internal_tool_error(struct rlmcp_call *c)
{
    return tool_error_answer(c->id, c->tool, "internal",
                             "the tool failed unexpectedly; details are in "
                             "the server log",
                             "retry; if it fails again, report it to the "
                             "operator");
}

static char *tool_answer(struct rlmcp_call *c, int rc)
{
    cJSON *items = NULL;
    cJSON *structured = NULL;
    cJSON *extra = NULL;
    cJSON *r = NULL;
    char *text = NULL;
    bool is_error;

    if (rc < 0) {
        log_msg(RLMCP_LOG_ERROR, c->plugin_name, "tool '%s' failed: %s (%d)",
                c->what, services_strerror(rc), rc);
        return internal_tool_error(c);
    }
    pthread_mutex_lock(&c->lock);
    items = take(&c->items);
    structured = take(&c->structured);
    is_error = c->is_error;
    pthread_mutex_unlock(&c->lock);

    call_note_devbox(c, structured);
    if (is_error) {
        /* What the tool set after its result_error joins the error. */
        pthread_mutex_lock(&c->lock);
        extra = structured;
        structured = error_structured(c->tool, c->err_obj, extra);
        pthread_mutex_unlock(&c->lock);
        cJSON_Delete(extra);
    } else if (!c->op_unchecked && !output_ok(c, structured)) {
        cJSON_Delete(items);
        cJSON_Delete(structured);
        return internal_tool_error(c);
    }
    if (structured != NULL && cJSON_GetArraySize(items) == 0) {
        /* Mirror for clients that read only content (spec: SHOULD). */
        cJSON *block = cJSON_CreateObject();

        text = cJSON_PrintUnformatted(structured);
        cJSON_AddStringToObject(block, "type", "text");
        cJSON_AddStringToObject(block, "text", text != NULL ? text : "{}");
        cJSON_AddItemToArray(items, block);
        free(text);
    }
    r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "content", items);
    if (structured != NULL)
        cJSON_AddItemToObject(r, "structuredContent", structured);
    if (is_error)
        cJSON_AddBoolToObject(r, "isError", true);
    return jsonrpc_result(c->id, r);
}

/* The JSON-RPC code of a failed read: its error code decides. */
static int resource_error_code(const char *code)
{
    if (strcmp(code, "not_found") == 0)
        return MCP_RESOURCE_NOT_FOUND;
    if (strcmp(code, "invalid_argument") == 0 || strcmp(code, "too_large") == 0)
        return JSONRPC_INVALID_PARAMS;
    return JSONRPC_INTERNAL_ERROR;
}

/*
 * A read the handler failed with result_error: a JSON-RPC error whose
 * message is the handler's and whose data holds the uri, the error code
 * (docs/errors.md) and the remedy.
 */
static char *resource_error_answer(struct rlmcp_call *c, cJSON *items)
{
    const cJSON *block = cJSON_GetArrayItem(items, 0);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(block, "text");
    cJSON *outer = cJSON_IsString(text) ? cJSON_Parse(text->valuestring) : NULL;
    cJSON *e = cJSON_GetObjectItemCaseSensitive(outer, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    cJSON *data = cJSON_CreateObject();
    char *json = NULL;
    cJSON *item = NULL;

    cJSON_AddStringToObject(data, "uri", c->uri);
    cJSON_ArrayForEach(item, e)
    {
        if (strcmp(item->string, "message") != 0)
            cJSON_AddItemToObject(data, item->string,
                                  cJSON_Duplicate(item, true));
    }
    json = jsonrpc_error(
        c->id,
        cJSON_IsString(code) ? resource_error_code(code->valuestring)
                             : JSONRPC_INTERNAL_ERROR,
        cJSON_IsString(msg) ? msg->valuestring : "reading the resource failed",
        data);
    cJSON_Delete(data);
    cJSON_Delete(outer);
    return json;
}

static char *resource_answer(struct rlmcp_call *c, int rc)
{
    char msg[512];
    cJSON *r = NULL;
    cJSON *data = NULL;
    cJSON *items = NULL;
    cJSON *meta = NULL;
    char *json = NULL;
    bool is_error;

    if (rc == RLMCP_ENOTFOUND) {
        snprintf(msg, sizeof(msg), "resource not found: %s; see resources/list",
                 c->uri);
        data = cJSON_CreateObject();
        cJSON_AddStringToObject(data, "uri", c->uri);
        json = jsonrpc_error(c->id, MCP_RESOURCE_NOT_FOUND, msg, data);
        cJSON_Delete(data);
        return json;
    }
    if (rc < 0) {
        log_msg(RLMCP_LOG_ERROR, c->plugin_name,
                "reading resource '%s' failed: %s (%d)", c->uri,
                services_strerror(rc), rc);
        return jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR,
                             "reading the resource failed; details are in "
                             "the server log",
                             NULL);
    }
    pthread_mutex_lock(&c->lock);
    items = take(&c->items);
    meta = take(&c->structured);
    is_error = c->is_error;
    pthread_mutex_unlock(&c->lock);
    if (is_error) {
        json = resource_error_answer(c, items);
        cJSON_Delete(items);
        cJSON_Delete(meta);
        return json;
    }
    r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "contents", items);
    if (meta != NULL)
        cJSON_AddItemToObject(r, "_meta", meta);
    return jsonrpc_result(c->id, r);
}

static char *prompt_answer(struct rlmcp_call *c, int rc)
{
    cJSON *r = NULL;

    if (rc < 0) {
        log_msg(RLMCP_LOG_ERROR, c->plugin_name, "prompt '%s' failed: %s (%d)",
                c->what, services_strerror(rc), rc);
        return jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR,
                             "the prompt failed; details are in the server "
                             "log",
                             NULL);
    }
    r = cJSON_CreateObject();
    if (c->prompt->description != NULL)
        cJSON_AddStringToObject(r, "description", c->prompt->description);
    pthread_mutex_lock(&c->lock);
    cJSON_AddItemToObject(r, "messages", take(&c->items));
    pthread_mutex_unlock(&c->lock);
    return jsonrpc_result(c->id, r);
}

static void answer(struct rlmcp_call *c, int rc)
{
    enum cancel_reason reason;
    char *json = NULL;

    pthread_mutex_lock(&c->lock);
    reason = c->reason;
    pthread_mutex_unlock(&c->lock);
    switch (reason) {
    case CANCEL_CLIENT:
        call_send(c, NULL, true);
        return;
    case CANCEL_TIMEOUT:
        return; /* the timer answered */
    case CANCEL_SHUTDOWN:
        json = shutdown_answer(c);
        break;
    case CANCEL_NONE:
        /* A stateless call may end asking the client for input. */
        if (c->mrtr != NULL)
            json = mrtr_final(c->mrtr, c->id, rc);
        if (json != NULL)
            break;
        if (c->kind == CALL_TOOL)
            json = tool_answer(c, rc);
        else if (c->kind == CALL_RESOURCE)
            json = resource_answer(c, rc);
        else
            json = prompt_answer(c, rc);
        break;
    }
    if (json == NULL) {
        log_msg(RLMCP_LOG_ERROR, NULL, "out of memory answering '%s'", c->what);
        call_fail(c, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    call_send(c, json, true);
    free(json);
}

void call_job(void *arg)
{
    struct rlmcp_call *c = arg;
    int rc = RLMCP_ECANCELLED;
    uint64_t start_ns = call_account_begin(c);

    if (!atomic_load(&c->cancelled))
        rc = run_handler(c);
    answer(c, rc);
    /* After the answer: a plugin's forgotten handle never delays it. */
    call_ws_close_left(c);
    call_account_end(c, rc, start_ns);
    mcp_unlink_call(c);
    call_unref(c);
}

/* ---- call-scope services ------------------------------------------------ */

static int append_item(struct rlmcp_call *c, enum call_kind kind, cJSON *item)
{
    int rc = RLMCP_OK;

    if (item == NULL)
        return RLMCP_ENOMEM;
    pthread_mutex_lock(&c->lock);
    if (c->kind != kind || c->items == NULL) {
        rc = RLMCP_ESTATE;
    } else if (c->is_error && kind != CALL_TOOL) {
        rc = RLMCP_ESTATE; /* a failed read is a JSON-RPC error */
    } else {
        /* After a tool's error block: what the failure leaves to see (the
         * output of a command that timed out). */
        cJSON_AddItemToArray(c->items, item);
        item = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    cJSON_Delete(item);
    return rc;
}

int call_result_text(rlmcp_call *call, const char *text)
{
    cJSON *block = NULL;
    char *clean = NULL;

    if (call == NULL || text == NULL)
        return RLMCP_EINVAL;
    clean = jsonrpc_utf8_sanitize(text, strlen(text));
    if (clean == NULL)
        return RLMCP_ENOMEM;
    block = cJSON_CreateObject();
    if (block != NULL &&
        (cJSON_AddStringToObject(block, "type", "text") == NULL ||
         cJSON_AddStringToObject(block, "text", clean) == NULL)) {
        cJSON_Delete(block);
        block = NULL;
    }
    free(clean);
    return append_item(call, CALL_TOOL, block);
}

/* Parse plugin JSON text: valid UTF-8, one object. */
static int parse_object(const char *json, size_t len, cJSON **out)
{
    cJSON *v = NULL;
    const char *end = NULL;

    *out = NULL;
    if (json == NULL || !jsonrpc_utf8_valid(json, len, NULL))
        return RLMCP_EINVAL;
    v = cJSON_ParseWithLengthOpts(json, len, &end, false);
    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        return RLMCP_EINVAL;
    }
    *out = v;
    return RLMCP_OK;
}

static bool has_string_type(const cJSON *o)
{
    return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "type"));
}

int call_result_content(rlmcp_call *call, const char *json, size_t len)
{
    cJSON *block = NULL;

    if (call == NULL || parse_object(json, len, &block) != RLMCP_OK)
        return RLMCP_EINVAL;
    if (!has_string_type(block)) {
        cJSON_Delete(block);
        return RLMCP_EINVAL;
    }
    return append_item(call, CALL_TOOL, block);
}

int call_result_json(rlmcp_call *call, const char *json, size_t len)
{
    cJSON *v = NULL;
    int rc = RLMCP_OK;

    if (call == NULL || parse_object(json, len, &v) != RLMCP_OK)
        return RLMCP_EINVAL;
    pthread_mutex_lock(&call->lock);
    if (call->kind == CALL_PROMPT) {
        rc = RLMCP_ESTATE;
    } else {
        /* A resource read's structured value is its result's _meta. */
        cJSON_Delete(call->structured);
        call->structured = v;
        v = NULL;
    }
    pthread_mutex_unlock(&call->lock);
    cJSON_Delete(v);
    return rc;
}

/*
 * An error names tools and parameters as the deployment exposes them; the
 * remedy also loses what sends the agent to a hidden tool (NULL when
 * nothing is left).
 */
static int deployment_text(const rlmcp_call *call, char **msg, char **remedy)
{
    char *m = NULL;
    char *r = NULL;

    if (call->dep == NULL || call->tool == NULL)
        return 0;
    m = textmap_apply(call->dep->reg, call->tool, *msg, TEXTMAP_RENAME);
    if (m == NULL)
        return -1;
    free(*msg);
    *msg = m;
    if (*remedy == NULL)
        return 0;
    r = textmap_apply(call->dep->reg, call->tool, *remedy, TEXTMAP_DROP_HIDDEN);
    if (r == NULL)
        return -1;
    free(*remedy);
    *remedy = NULL;
    if (r[0] == '\0')
        free(r);
    else
        *remedy = r;
    return 0;
}

int call_result_error(rlmcp_call *call, const char *code, const char *remedy,
                      const char *fmt, ...)
{
    va_list ap;
    char *raw = NULL;
    char *msg = NULL;
    char *clean_remedy = NULL;
    cJSON *err = NULL;
    cJSON *block = NULL;
    int rc = RLMCP_ENOMEM;

    if (call == NULL || code == NULL || code[0] == '\0' || fmt == NULL)
        return RLMCP_EINVAL;
    va_start(ap, fmt);
    if (vasprintf(&raw, fmt, ap) < 0)
        raw = NULL;
    va_end(ap);
    if (raw == NULL)
        goto out;
    msg = jsonrpc_utf8_sanitize(raw, strlen(raw));
    if (remedy != NULL)
        clean_remedy = jsonrpc_utf8_sanitize(remedy, strlen(remedy));
    if (msg == NULL || (remedy != NULL && clean_remedy == NULL))
        goto out;
    if (deployment_text(call, &msg, &clean_remedy) < 0)
        goto out;
    err = error_object(code, msg, clean_remedy);
    block = error_block_of(err);
    if (block == NULL)
        goto out;
    pthread_mutex_lock(&call->lock);
    if (call->kind == CALL_PROMPT || call->items == NULL) {
        rc = RLMCP_ESTATE;
    } else {
        /* A resource read answers it as a JSON-RPC error (resource_answer). */
        cJSON_Delete(call->items);
        call->items = cJSON_CreateArray();
        cJSON_AddItemToArray(call->items, block);
        block = NULL;
        cJSON_Delete(call->structured);
        call->structured = NULL;
        cJSON_Delete(call->err_obj);
        call->err_obj = err;
        err = NULL;
        call->is_error = true;
        snprintf(call->err_code, sizeof(call->err_code), "%s", code);
        rc = RLMCP_OK;
    }
    pthread_mutex_unlock(&call->lock);
out:
    cJSON_Delete(err);
    cJSON_Delete(block);
    free(raw);
    free(msg);
    free(clean_remedy);
    return rc;
}

int call_progress(rlmcp_call *call, double progress, double total,
                  const char *message)
{
    uint64_t now;
    bool final_step;
    bool kick = false;
    char *clean = NULL;
    int rc = RLMCP_OK;

    if (call == NULL || isnan(progress) || isinf(progress) || isnan(total))
        return RLMCP_EINVAL;
    if (call->progress_token == NULL)
        return RLMCP_OK;
    /* Output chunks may end mid-character: never send invalid UTF-8. */
    if (message != NULL) {
        clean = jsonrpc_utf8_sanitize(message, strlen(message));
        if (clean == NULL)
            return RLMCP_ENOMEM;
    }
    pthread_mutex_lock(&call->send_lock);
    if (call->responded)
        goto out;
    if (call->progress_any && progress <= call->last_progress) {
        rc = RLMCP_EINVAL; /* the spec wants progress to grow */
        goto out;
    }
    call->progress_any = true;
    call->last_progress = progress;
    now = deadline_now_ns();
    final_step = total >= 0 && progress >= total;
    /* A message held back from a burst goes out with this one: the
     * messages of an output stream are parts of one text. */
    if (call->progress_pending) {
        clean = join_messages(call->pend_message, clean);
        call->pend_message = NULL;
    }
    if (final_step || now - call->progress_sent_ns >= PROGRESS_COALESCE_NS ||
        (clean != NULL && strlen(clean) >= PROGRESS_JOIN_MAX)) {
        call->progress_pending = false;
        atomic_store(&call->progress_due_ns, 0);
        call->progress_sent_ns = now;
        send_progress_locked(call, progress, total, clean);
        goto out;
    }
    /* A burst: the latest value, the joined messages; sent when the
     * interval ends (the dispatcher's timer), or sooner with the next. */
    call->pend_message = clean;
    clean = NULL;
    call->pend_progress = progress;
    call->pend_total = total;
    if (!call->progress_pending) {
        call->progress_pending = true;
        atomic_store(&call->progress_due_ns,
                     call->progress_sent_ns + PROGRESS_COALESCE_NS);
        kick = true;
    }
out:
    pthread_mutex_unlock(&call->send_lock);
    free(clean);
    if (kick && call->d != NULL)
        mcp_timer_kick(call->d);
    return rc;
}

bool call_is_cancelled(rlmcp_call *call)
{
    return call == NULL || atomic_load(&call->cancelled);
}

int call_sleep_ms(rlmcp_call *call, uint32_t ms)
{
    uint64_t until = 0;
    int rc = 0;

    if (call == NULL)
        return RLMCP_EINVAL;
    flush_progress(call);
    until = deadline_now_ns() + (uint64_t)ms * 1000000ull;
    pthread_mutex_lock(&call->lock);
    while (!atomic_load(&call->cancelled) && rc != ETIMEDOUT)
        rc = deadline_cond_wait(&call->cond, &call->lock, until);
    pthread_mutex_unlock(&call->lock);
    return atomic_load(&call->cancelled) ? RLMCP_ECANCELLED : RLMCP_OK;
}

void call_log(rlmcp_call *call, int level, const char *fmt, ...)
{
    va_list ap;
    char *raw = NULL;
    char *text = NULL;
    char *json = NULL;
    cJSON *p = NULL;

    if (call == NULL || fmt == NULL)
        return;
    if (level < RLMCP_LOG_DEBUG)
        level = RLMCP_LOG_DEBUG;
    if (level > RLMCP_LOG_EMERGENCY)
        level = RLMCP_LOG_EMERGENCY;
    va_start(ap, fmt);
    if (vasprintf(&raw, fmt, ap) < 0)
        raw = NULL;
    va_end(ap);
    if (raw == NULL)
        return;
    text = jsonrpc_utf8_sanitize(raw, strlen(raw));
    if (text == NULL)
        goto out;
    log_msg(level, call->plugin_name, "%s", text);
    if (level < mcp_session_log_level(call->s))
        goto out;
    p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "level", mcp_level_name(level));
    if (call->plugin_name != NULL)
        cJSON_AddStringToObject(p, "logger", call->plugin_name);
    cJSON_AddStringToObject(p, "data", text);
    json = jsonrpc_notification("notifications/message", p);
    if (json != NULL)
        call_send(call, json, false);
out:
    free(json);
    free(text);
    free(raw);
}

static bool probe_cancelled(void *ctx)
{
    return atomic_load(&((struct rlmcp_call *)ctx)->cancelled);
}

/*
 * A clean-up request (RLMCP_HTTP_IGNORE_CANCEL) must still go out after the
 * call was cancelled, e.g. to kill the remote execution; it is bounded by
 * its own timeout instead. Plugins built before the flags field existed
 * never set it.
 */
static rlclient_cancel_fn call_probe(const struct rlmcp_http_req *req)
{
    size_t end = offsetof(struct rlmcp_http_req, flags) + sizeof(req->flags);

    if (req->struct_size >= end && (req->flags & RLMCP_HTTP_IGNORE_CANCEL))
        return NULL;
    return probe_cancelled;
}

static const char *call_key(struct rlmcp_call *c)
{
    return c->api_key != NULL ? c->api_key : mcp_default_key(c->d);
}

/*
 * The bound of one request: the call's deadline. A clean-up request
 * (RLMCP_HTTP_IGNORE_CANCEL) sent after the deadline passed (the host
 * already answered with a timeout) is bounded by its own timeout only.
 */
static struct rlclient_bound call_bound(struct rlmcp_call *call,
                                        const struct rlmcp_http_req *req)
{
    struct rlclient_bound b = {call_probe(req), call, 0};
    bool cleanup = b.cancelled == NULL;

    if (call->deadline_ns != 0 &&
        (!cleanup || call->deadline_ns > deadline_now_ns()))
        b.deadline_ms = call->deadline_ns / 1000000ull;
    /* Leave the handler time to answer before the timer does. */
    if (b.deadline_ms > CALL_ANSWER_MARGIN_MS)
        b.deadline_ms -= CALL_ANSWER_MARGIN_MS;
    return b;
}

/* Keep why a request failed for call_last_error (handler thread only). */
static int note_result(struct rlmcp_call *call, int rc)
{
    if (rc == RLMCP_OK)
        call->last_error[0] = '\0';
    else
        snprintf(call->last_error, sizeof(call->last_error), "%s",
                 rlclient_last_reason());
    return rc;
}

static bool no_client(struct rlmcp_call *call)
{
    if (mcp_rlclient(call->d) != NULL)
        return false;
    log_msg(RLMCP_LOG_ERROR, call->plugin_name,
            "no Runloop API client is configured (runloop: section)");
    snprintf(call->last_error, sizeof(call->last_error),
             "no Runloop API client is configured");
    return true;
}

int call_runloop_request(rlmcp_call *call, const struct rlmcp_http_req *req,
                         struct rlmcp_http_resp **resp_out)
{
    struct rlclient_bound b;

    if (resp_out != NULL)
        *resp_out = NULL;
    if (call == NULL || req == NULL || resp_out == NULL)
        return RLMCP_EINVAL;
    if (no_client(call))
        return RLMCP_EHTTP;
    b = call_bound(call, req);
    return note_result(call, rlclient_request_bound(mcp_rlclient(call->d),
                                                    call_key(call), req,
                                                    resp_out, &b));
}

void call_http_resp_free(struct rlmcp_http_resp *resp)
{
    rlclient_resp_free(resp);
}

int call_runloop_sse(rlmcp_call *call, const struct rlmcp_http_req *req,
                     rlmcp_sse_fn on_event, void *user, long *status_out)
{
    struct rlclient_bound b;

    if (status_out != NULL)
        *status_out = 0;
    if (call == NULL || req == NULL || on_event == NULL)
        return RLMCP_EINVAL;
    if (no_client(call))
        return RLMCP_EHTTP;
    b = call_bound(call, req);
    return note_result(call,
                       rlclient_sse_bound(mcp_rlclient(call->d), call_key(call),
                                          req, on_event, user, status_out, &b));
}

uint64_t call_deadline_ms(rlmcp_call *call)
{
    return call != NULL ? call->deadline_ns / 1000000ull : 0;
}

const char *call_last_error(rlmcp_call *call)
{
    return call != NULL ? call->last_error : "";
}

/* ---- ABI 1.1: tunnels ------------------------------------------------ */

/*
 * The origin of t's port for this host's backend, or NULL after logging
 * why. The call's API key is never used here: a tunnel gets its own token.
 */
static char *tunnel_origin(struct rlmcp_call *call,
                           const struct rlmcp_tunnel *t)
{
    char *origin = NULL;

    if (t == NULL || t->struct_size < RLMCP_TUNNEL_SIZE_1_1) {
        log_msg(RLMCP_LOG_ERROR, call->plugin_name,
                "tunnel is NULL or its struct_size is too small; use "
                "RLMCP_TUNNEL_INIT");
        return NULL;
    }
    if (mcp_rlclient(call->d) == NULL) {
        log_msg(RLMCP_LOG_ERROR, call->plugin_name,
                "no Runloop API client is configured (runloop: section)");
        return NULL;
    }
    origin =
        rlclient_tunnel_origin(mcp_rlclient(call->d), t->tunnel_key, t->port);
    if (origin == NULL)
        log_msg(RLMCP_LOG_ERROR, call->plugin_name, "tunnel: %s",
                rlclient_last_error());
    return origin;
}

int call_runloop_tunnel_request(rlmcp_call *call, const struct rlmcp_tunnel *t,
                                const struct rlmcp_http_req *req,
                                struct rlmcp_http_resp **resp_out)
{
    struct rlclient_bound b;
    char *origin = NULL;
    int rc = RLMCP_EINVAL;

    if (resp_out != NULL)
        *resp_out = NULL;
    if (call == NULL || req == NULL || resp_out == NULL)
        return RLMCP_EINVAL;
    origin = tunnel_origin(call, t);
    if (origin == NULL)
        return RLMCP_EINVAL;
    b = call_bound(call, req);
    rc = note_result(call, rlclient_tunnel_request_bound(mcp_rlclient(call->d),
                                                         origin, t->auth_token,
                                                         req, resp_out, &b));
    if (rc == RLMCP_EINVAL)
        log_msg(RLMCP_LOG_ERROR, call->plugin_name, "tunnel request: %s",
                rlclient_last_error());
    free(origin);
    return rc;
}

/* A WebSocket upgrade, tried again by retry_upgrade. */
typedef int (*upgrade_fn)(void *ctx, long *status, char *err, size_t errlen);

/*
 * Run attempt, again after an upgrade refused with 502/503/504 (the tunnel
 * not routed yet) as tunnel requests are retried: 4 retries, backoff
 * min(250 ms * 2^n, 2 s). A backoff that would end after deadline_ms (0:
 * none) is not taken: the refusal is the answer.
 */
static int retry_upgrade(struct rlmcp_call *call, upgrade_fn attempt, void *ctx,
                         uint64_t deadline_ms, char *err, size_t errlen)
{
    int retries = 0;
    int rc = RLMCP_OK;

    for (retries = 0;; retries++) {
        long status = 0;
        uint32_t delay = 250u << retries;

        rc = attempt(ctx, &status, err, errlen);
        if (rc != RLMCP_EHTTP || retries >= 4 ||
            (status != 502 && status != 503 && status != 504))
            return rc;
        delay = delay < 2000u ? delay : 2000u;
        if (deadline_ms != 0 &&
            deadline_now_ns() / 1000000ull + delay >= deadline_ms)
            return rc;
        if (call_sleep_ms(call, delay) != RLMCP_OK)
            return RLMCP_ECANCELLED;
    }
}

/* A token fit for a header line: at most 512 visible ASCII characters. */
static bool ws_token_ok(const char *tok)
{
    size_t n = 0;

    for (n = 0; tok[n] != '\0'; n++) {
        if ((unsigned char)tok[n] <= 0x20 || (unsigned char)tok[n] >= 0x7f)
            return false;
    }
    return n <= 512;
}

#define WS_TOKEN_BAD                                                           \
    "the tunnel token is longer than 512 characters or holds spaces or "       \
    "control characters"

struct pty_attempt {
    const char *origin;
    const char *token;
    struct rlmcp_pty_exchange *x;
    struct rlmcp_call *call;
};

static int pty_attempt(void *ctx, long *status, char *err, size_t errlen)
{
    struct pty_attempt *p = ctx;
    int rc = ws_pty_exchange(p->origin, p->token, p->x, probe_cancelled,
                             p->call, err, errlen);

    *status = p->x->upgrade_status;
    return rc;
}

int call_runloop_pty_exchange(rlmcp_call *call, const struct rlmcp_tunnel *t,
                              struct rlmcp_pty_exchange *x)
{
    struct pty_attempt p;
    char err[2600] = "";
    char *origin = NULL;
    int rc = RLMCP_EINVAL;

    if (call == NULL || x == NULL ||
        x->struct_size < RLMCP_PTY_EXCHANGE_SIZE_1_1)
        return RLMCP_EINVAL;
    origin = tunnel_origin(call, t);
    if (origin == NULL)
        return RLMCP_EINVAL;
    /* As for runloop_ws_open: the token becomes a header line. */
    if (t->auth_token != NULL && !ws_token_ok(t->auth_token)) {
        snprintf(call->last_error, sizeof(call->last_error), "%s",
                 WS_TOKEN_BAD);
        log_msg(RLMCP_LOG_ERROR, call->plugin_name, "pty exchange: %s",
                WS_TOKEN_BAD);
        free(origin);
        return RLMCP_EINVAL;
    }
    /* A refused upgrade delivered no output, so it can be tried again. */
    p.origin = origin;
    p.token = t->auth_token;
    p.x = x;
    p.call = call;
    rc = retry_upgrade(call, pty_attempt, &p, 0, err, sizeof(err));
    if (rc != RLMCP_OK && rc != RLMCP_ECANCELLED)
        log_msg(rc == RLMCP_EHTTP ? RLMCP_LOG_WARNING : RLMCP_LOG_ERROR,
                call->plugin_name, "pty exchange: %s", err);
    free(origin);
    return rc;
}

/* ---- ABI 1.6: WebSockets to any tunnel port ------------------------- */

struct rlmcp_ws {
    struct ws_conn *conn;
    struct rlmcp_call *call;
    pthread_t owner;              /* the opening thread: lws is not MT-safe */
    struct rlmcp_ws *next, *prev; /* call->ws_open */
};

/* A handle used off its opening thread is refused, not run into lws. */
static bool ws_wrong_thread(const struct rlmcp_ws *ws, const char *what)
{
    if (pthread_equal(ws->owner, pthread_self()))
        return false;
    log_msg(RLMCP_LOG_ERROR, ws->call->plugin_name,
            "websocket %s: the handle belongs to the thread that opened it",
            what);
    return true;
}

/* Keep a WebSocket service's outcome for call_last_error. */
static int ws_note(struct rlmcp_call *call, int rc, const char *err)
{
    if (rc == RLMCP_OK)
        call->last_error[0] = '\0';
    else
        snprintf(call->last_error, sizeof(call->last_error), "%s", err);
    return rc;
}

/* The deadline every step of a call's WebSocket keeps (ms, 0: none). */
static uint64_t ws_deadline(const struct rlmcp_call *call)
{
    uint64_t ms = call->deadline_ns / 1000000ull;

    return ms > CALL_ANSWER_MARGIN_MS ? ms - CALL_ANSWER_MARGIN_MS : ms;
}

/* The tunnel's origin for a WebSocket, or NULL with the reason in err. */
static char *ws_origin(struct rlmcp_call *call, const struct rlmcp_tunnel *t,
                       char *err, size_t errlen)
{
    char *origin = NULL;

    if (t == NULL || t->struct_size < RLMCP_TUNNEL_SIZE_1_1) {
        snprintf(err, errlen,
                 "tunnel is NULL or its struct_size is too "
                 "small; use RLMCP_TUNNEL_INIT");
        return NULL;
    }
    if (t->auth_token != NULL && !ws_token_ok(t->auth_token)) {
        snprintf(err, errlen, "%s", WS_TOKEN_BAD);
        return NULL;
    }
    if (mcp_rlclient(call->d) == NULL) {
        snprintf(err, errlen, "no Runloop API client is configured");
        return NULL;
    }
    origin =
        rlclient_tunnel_origin(mcp_rlclient(call->d), t->tunnel_key, t->port);
    if (origin == NULL)
        snprintf(err, errlen, "tunnel: %s", rlclient_last_error());
    return origin;
}

/* call->ws_open under the call's lock: a plugin may open from any of its
 * threads while the handler runs. */
static void ws_link(struct rlmcp_call *call, struct rlmcp_ws *h)
{
    pthread_mutex_lock(&call->lock);
    DLIST_PUSH(call->ws_open, h, prev, next);
    pthread_mutex_unlock(&call->lock);
}

static void ws_unlink(struct rlmcp_call *call, struct rlmcp_ws *h)
{
    pthread_mutex_lock(&call->lock);
    DLIST_UNLINK(call->ws_open, h, prev, next);
    h->next = NULL;
    h->prev = NULL;
    pthread_mutex_unlock(&call->lock);
}

/* The first handle left open, unlinked; NULL when none is. */
static struct rlmcp_ws *ws_take_left(struct rlmcp_call *call)
{
    struct rlmcp_ws *h = NULL;

    pthread_mutex_lock(&call->lock);
    h = call->ws_open;
    if (h != NULL) {
        DLIST_UNLINK(call->ws_open, h, prev, next);
        h->next = NULL;
    }
    pthread_mutex_unlock(&call->lock);
    return h;
}

struct ws_attempt {
    struct ws_conn_args a;
    struct ws_conn *conn;
    long status; /* the last attempt's refused upgrade */
};

static int ws_attempt(void *ctx, long *status, char *err, size_t errlen)
{
    struct ws_attempt *w = ctx;
    int rc = ws_conn_open(&w->a, &w->conn, status, err, errlen);

    w->status = *status;
    return rc;
}

static int ws_open_checked(struct rlmcp_call *call,
                           const struct rlmcp_tunnel *t,
                           struct rlmcp_ws_open *o, rlmcp_ws **out, char *err,
                           size_t errlen)
{
    struct ws_attempt w;
    struct rlmcp_ws *h = NULL;
    char *origin = NULL;
    int rc = RLMCP_EINVAL;

    memset(&w, 0, sizeof(w));
    origin = ws_origin(call, t, err, errlen);
    if (origin == NULL)
        return RLMCP_EINVAL;
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    w.a.origin = origin;
    w.a.token = t->auth_token;
    w.a.path = o->path;
    w.a.subprotocol = o->subprotocol;
    w.a.max_message = o->max_message;
    w.a.connect_ms = o->connect_timeout_ms;
    w.a.cancelled = probe_cancelled;
    w.a.cancel_ctx = call;
    w.a.deadline_ms = ws_deadline(call);
    rc = retry_upgrade(call, ws_attempt, &w, w.a.deadline_ms, err, errlen);
    o->upgrade_status = w.status;
    if (rc != RLMCP_OK)
        goto out;
    h->conn = w.conn;
    h->call = call;
    h->owner = pthread_self();
    ws_link(call, h);
    *out = h;
    h = NULL;
out:
    free(h);
    free(origin);
    return rc;
}
int call_runloop_ws_open(rlmcp_call *call, const struct rlmcp_tunnel *t,
                         struct rlmcp_ws_open *o, rlmcp_ws **out)
{
    char err[2600] = "";
    int rc = RLMCP_EINVAL;

    if (out != NULL)
        *out = NULL;
    if (call == NULL)
        return RLMCP_EINVAL;
    if (o == NULL || out == NULL || o->struct_size < RLMCP_WS_OPEN_SIZE_1_6) {
        snprintf(err, sizeof(err),
                 "ws open: o or out is NULL, or o's "
                 "struct_size is too small; use "
                 "RLMCP_WS_OPEN_INIT");
    } else {
        o->upgrade_status = 0;
        rc = ws_open_checked(call, t, o, out, err, sizeof(err));
    }
    if (rc != RLMCP_OK && rc != RLMCP_ECANCELLED)
        log_msg(rc == RLMCP_EHTTP || rc == RLMCP_ETIMEDOUT ? RLMCP_LOG_WARNING
                                                           : RLMCP_LOG_ERROR,
                call->plugin_name, "websocket: %s", err);
    return ws_note(call, rc, err);
}

int call_runloop_ws_send(rlmcp_ws *ws, const void *data, size_t len, bool text)
{
    char err[2600] = "";

    if (ws == NULL)
        return RLMCP_EINVAL;
    if (ws_wrong_thread(ws, "send"))
        return RLMCP_ESTATE;
    return ws_note(ws->call,
                   ws_conn_send(ws->conn, data, len, text, err, sizeof(err)),
                   err);
}

int call_runloop_ws_recv(rlmcp_ws *ws, uint32_t timeout_ms,
                         struct rlmcp_ws_message *m)
{
    char err[2600] = "";

    if (ws == NULL)
        return RLMCP_EINVAL;
    if (ws_wrong_thread(ws, "recv"))
        return RLMCP_ESTATE;
    if (m == NULL || m->struct_size < RLMCP_WS_MESSAGE_SIZE_1_6)
        return ws_note(ws->call, RLMCP_EINVAL,
                       "ws recv: m is NULL or its struct_size is too small; "
                       "use RLMCP_WS_MESSAGE_INIT");
    return ws_note(
        ws->call, ws_conn_recv(ws->conn, timeout_ms, m, err, sizeof(err)), err);
}

/* Close codes an endpoint may send (RFC 6455 7.4, IANA registry). */
static bool ws_code_ok(int code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

/* Close an unlinked handle and free it. */
static void ws_free(struct rlmcp_ws *ws, int code)
{
    ws_conn_close(ws->conn, code);
    free(ws);
}

int call_runloop_ws_close(rlmcp_ws *ws, int code)
{
    int rc = RLMCP_OK;

    if (ws == NULL)
        return RLMCP_OK;
    /* The owner may be inside send or recv on it: never free it here. */
    if (ws_wrong_thread(ws, "close"))
        return RLMCP_ESTATE;
    if (code == 0)
        code = 1000;
    if (!ws_code_ok(code)) {
        rc = ws_note(ws->call, RLMCP_EINVAL,
                     "ws close: a client may not send that close code; "
                     "closed with 1000");
        code = 1000;
    }
    ws_unlink(ws->call, ws);
    ws_free(ws, code);
    return rc;
}

void call_ws_close_left(struct rlmcp_call *call)
{
    struct rlmcp_ws *ws = NULL;
    unsigned n = 0;

    /* On the handler's thread after it returned: no plugin thread may
     * still use a handle, whichever opened it. */
    while ((ws = ws_take_left(call)) != NULL) {
        ws_free(ws, 1001);
        n++;
    }
    if (n > 0)
        log_msg(RLMCP_LOG_WARNING, call->plugin_name,
                "'%s' returned with %u WebSocket%s open; the host closed "
                "them",
                call->what, n, n == 1 ? "" : "s");
}

/* The client capability a server-to-client method needs. */
static const char *method_capability(const char *method)
{
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    if (strcmp(method, "roots/list") == 0)
        return "roots";
    return method;
}

/* Wait for the answer, the call's cancellation or the timeout. */
static bool wait_answer(struct rlmcp_call *c, struct pending_req *p,
                        uint32_t timeout_ms)
{
    uint64_t until = deadline_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    int rc = 0;
    bool done;

    pthread_mutex_lock(&c->lock);
    while (!p->done && !atomic_load(&c->cancelled) && rc != ETIMEDOUT) {
        if (timeout_ms != 0)
            rc = deadline_cond_wait(&c->cond, &c->lock, until);
        else
            pthread_cond_wait(&c->cond, &c->lock);
    }
    done = p->done;
    pthread_mutex_unlock(&c->lock);
    return done;
}

/* Tell the client we gave up on our request (spec: SHOULD). */
static void cancel_client_request(struct rlmcp_call *c, const char *id,
                                  const char *reason)
{
    cJSON *params = cJSON_CreateObject();
    char *json = NULL;

    cJSON_AddStringToObject(params, "requestId", id);
    cJSON_AddStringToObject(params, "reason", reason);
    json = jsonrpc_notification("notifications/cancelled", params);
    if (json != NULL)
        call_send(c, json, false);
    free(json);
}

static char *build_request(const char *id, const char *method, cJSON *params)
{
    cJSON *o = cJSON_CreateObject();
    char *json = NULL;

    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "method", method);
    if (params != NULL && !cJSON_AddItemToObject(o, "params", params))
        cJSON_Delete(params); /* o is NULL: out of memory */
    json = o != NULL ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return json;
}

/*
 * Register p, send the request and wait. RLMCP_OK once answered, else
 * RLMCP_ECANCELLED or RLMCP_ETIMEDOUT (the client is told we gave up).
 */
static int exchange(struct rlmcp_call *call, struct pending_req *p,
                    const char *id, const char *json, uint32_t timeout_ms)
{
    bool cancelled;

    mcp_session_pending_add(call->s, p);

    flush_progress(call);
    if (!call_send(call, json, false)) {
        mcp_session_pending_remove(call->s, p);
        return RLMCP_ECANCELLED; /* already answered: the call is over */
    }
    if (wait_answer(call, p, timeout_ms)) {
        mcp_session_pending_remove(call->s, p);
        return RLMCP_OK;
    }
    mcp_session_pending_remove(call->s, p);
    cancelled = atomic_load(&call->cancelled);
    cancel_client_request(call, id, cancelled ? "cancelled" : "timeout");
    return cancelled ? RLMCP_ECANCELLED : RLMCP_ETIMEDOUT;
}

int call_client_request(rlmcp_call *call, const char *method,
                        const char *params_json, uint32_t timeout_ms,
                        char **result_out)
{
    struct pending_req p;
    cJSON *params = NULL;
    char id[48];
    char *json = NULL;
    int rc = RLMCP_EINVAL;

    memset(&p, 0, sizeof(p));
    if (result_out != NULL)
        *result_out = NULL;
    if (call == NULL || method == NULL || method[0] == '\0' ||
        result_out == NULL)
        return RLMCP_EINVAL;
    if (params_json != NULL &&
        parse_object(params_json, strlen(params_json), &params) != RLMCP_OK)
        return RLMCP_EINVAL;
    if (!mcp_session_client_allows(call->s, method)) {
        if (call->mrtr != NULL)
            mrtr_missing_capability(call->mrtr, method_capability(method));
        cJSON_Delete(params);
        return RLMCP_ENOTSUP;
    }
    if (atomic_load(&call->cancelled)) {
        cJSON_Delete(params);
        return RLMCP_ECANCELLED;
    }
    if (call->mrtr != NULL) {
        /* 2026-07-28: known answers return at once; others end the round. */
        rc = mrtr_request(call->mrtr, method, params, result_out);
        return rc == 0 ? RLMCP_OK : rc == 1 ? RLMCP_ECANCELLED : rc;
    }
    mrtr_strip_key(params); /* the key is for input rounds only */
    snprintf(id, sizeof(id), "rlmcp-%lu", mcp_next_request_id(call->d));
    json = build_request(id, method, params); /* consumes params */
    if (asprintf(&p.id_key, "\"%s\"", id) < 0)
        p.id_key = NULL;
    p.call = call;
    if (json == NULL || p.id_key == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = exchange(call, &p, id, json, timeout_ms);
    if (rc != RLMCP_OK)
        goto out;
    if (p.result != NULL) {
        *result_out = cJSON_PrintUnformatted(p.result);
        rc = *result_out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
    } else {
        *result_out = cJSON_PrintUnformatted(p.error);
        rc = RLMCP_EINVAL;
    }
out:
    free(json);
    free(p.id_key);
    cJSON_Delete(p.result);
    cJSON_Delete(p.error);
    return rc;
}

int call_resource_contents(rlmcp_call *call, const char *uri,
                           const char *mime_type, const void *data, size_t len,
                           bool is_blob)
{
    cJSON *item = NULL;
    char *value = NULL;

    if (call == NULL || (data == NULL && len > 0))
        return RLMCP_EINVAL;
    if (call->kind != CALL_RESOURCE)
        return RLMCP_ESTATE;
    if (is_blob)
        value =
            base64_encode(data != NULL ? data : (const void *)"", len, false);
    else
        value = jsonrpc_utf8_sanitize(data != NULL ? data : "", len);
    if (value == NULL)
        return RLMCP_ENOMEM;
    item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "uri", uri != NULL ? uri : call->uri);
    if (mime_type != NULL)
        cJSON_AddStringToObject(item, "mimeType", mime_type);
    cJSON_AddStringToObject(item, is_blob ? "blob" : "text", value);
    free(value);
    return append_item(call, CALL_RESOURCE, item);
}

int call_prompt_message(rlmcp_call *call, const char *role,
                        const char *content_json)
{
    cJSON *content = NULL;
    cJSON *msg = NULL;

    if (call == NULL || role == NULL || content_json == NULL ||
        (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0))
        return RLMCP_EINVAL;
    if (call->kind != CALL_PROMPT)
        return RLMCP_ESTATE;
    if (parse_object(content_json, strlen(content_json), &content) !=
            RLMCP_OK ||
        !has_string_type(content)) {
        cJSON_Delete(content);
        return RLMCP_EINVAL;
    }
    msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", role);
    cJSON_AddItemToObject(msg, "content", content);
    return append_item(call, CALL_PROMPT, msg);
}

rlmcp_plugin *call_plugin(rlmcp_call *call)
{
    return call != NULL ? loader_handle(call->plugin) : NULL;
}

/* The ABI 1.2 services exposed_tool_name and exposed_param_name. */
static const struct tool_entry *exposed_tool(rlmcp_call *call, const char *tool)
{
    const struct tool_entry *t = NULL;

    if (call == NULL || tool == NULL || call->dep == NULL)
        return NULL;
    t = registry_find_original(call->dep->reg, tool, strlen(tool));
    return t != NULL && t->selected ? t : NULL;
}

const char *call_exposed_tool_name(rlmcp_call *call, const char *tool)
{
    const struct tool_entry *t = exposed_tool(call, tool);

    return t != NULL ? t->name : NULL;
}

const char *call_exposed_param_name(rlmcp_call *call, const char *tool,
                                    const char *param)
{
    const struct tool_entry *t = exposed_tool(call, tool);
    const char *p = NULL;

    if (t == NULL || param == NULL)
        return NULL;
    p = textmap_param_name(t, param);
    return p != NULL ? p : param;
}
