/*
 * mcp.c - the MCP dispatcher: JSON-RPC checks, the lifecycle, the methods
 * answered inline (initialize, ping, lists, logging) and the ones queued
 * on the worker pool (tools/call, resources/read, prompts/get).
 */
#define _GNU_SOURCE /* asprintf */
#include "mcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "call.h"
#include "complete.h"
#include "config.h"
#include "deadline.h"
#include "dlist.h"
#include "intake.h"
#include "jsonrpc.h"
#include "listen.h"
#include "loader.h"
#include "log.h"
#include "call_state.h"
#include "dispatch.h"
#include "mcp_internal.h"
#include "mrtr.h"
#include "param_headers.h"
#include "pool.h"
#include "resources.h"
#include "revision.h"
#include "secret.h"
#include "strbuf.h"
#include "tasks.h"
#include "toolsets.h"

#include "schema.h"

#define DEFAULT_WORKERS 8
#define DEFAULT_TIMEOUT_MS 300000u
#define DEFAULT_PAGE_SIZE 100
#define DESTROY_DRAIN_MS 5000

static const char *const supported_versions[] = {
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
};

/* One inbound request answered inline. */
struct req {
    struct mcp_dispatcher *d;
    struct mcp_session *s;
    struct deployment *dep; /* referenced for the request's lifetime */
    struct mcp_sink *sink;
    const struct mcp_request_ctx *ctx;
    struct jsonrpc_msg *m;
    const cJSON *params; /* NULL when absent */
    bool stateless;      /* a 2026-07-28 request (revision.h) */
};

const char *mcp_level_name(int level)
{
    return log_level_name(level);
}

bool mcp_protocol_version_supported(const char *version)
{
    size_t i;

    if (version == NULL)
        return false;
    for (i = 0; i < sizeof(supported_versions) / sizeof(*supported_versions);
         i++) {
        if (strcmp(version, supported_versions[i]) == 0)
            return true;
    }
    return false;
}

char *mcp_error_message(int code, const char *message)
{
    return jsonrpc_error(NULL, code, message, NULL);
}

/* ---- replies ------------------------------------------------------------ */

void mcp_send_final(struct mcp_sink *sink, char *json)
{
    if (json == NULL) {
        log_msg(RLMCP_LOG_ERROR, NULL, "out of memory building a response");
        json =
            jsonrpc_error(NULL, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
    }
    if (json != NULL)
        sink->send(sink, json, strlen(json), true);
    free(json);
}

static void reply(struct req *r, cJSON *result)
{
    mcp_send_final(r->sink, jsonrpc_result(r->m->id, result));
}

void mcp_send_error(struct mcp_sink *sink, const cJSON *id, int code,
                    const cJSON *data, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mcp_send_final(sink, jsonrpc_error(id, code, msg, data));
}

#define reply_error_data(r, code, data, ...)                                   \
    mcp_send_error((r)->sink, (r)->m->id, code, data, __VA_ARGS__)
#define reply_error(r, code, ...) reply_error_data(r, code, NULL, __VA_ARGS__)

static const cJSON *param(const struct req *r, const char *name)
{
    return r->params != NULL ? cJSON_GetObjectItemCaseSensitive(r->params, name)
                             : NULL;
}

/* ---- sessions ----------------------------------------------------------- */

struct mcp_session *mcp_session_new(struct mcp_dispatcher *d)
{
    struct mcp_session *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->d = d;
    atomic_init(&s->refs, 1);
    atomic_init(&s->log_level, RLMCP_LOG_INFO);
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void mcp_session_set_label(struct mcp_session *s, const char *label)
{
    snprintf(s->label, sizeof(s->label), "%s", label);
}

const char *mcp_session_label(const struct mcp_session *s)
{
    return s->label;
}

const char *mcp_default_key(const struct mcp_dispatcher *d)
{
    return d->default_key;
}

struct rlclient *mcp_rlclient(const struct mcp_dispatcher *d)
{
    return d->rl;
}

unsigned long mcp_next_request_id(struct mcp_dispatcher *d)
{
    return atomic_fetch_add(&d->next_request_id, 1) + 1;
}

/* Whether the client declared the capability a method needs. */
bool mcp_session_client_allows(struct mcp_session *s, const char *method)
{
    bool ok = true;

    pthread_mutex_lock(&s->lock);
    if (strcmp(method, "sampling/createMessage") == 0)
        ok = s->cap_sampling;
    else if (strcmp(method, "elicitation/create") == 0)
        ok = s->cap_elicitation;
    else if (strcmp(method, "roots/list") == 0)
        ok = s->cap_roots;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

int mcp_session_log_level(const struct mcp_session *s)
{
    return atomic_load(&s->log_level);
}

void mcp_session_pending_add(struct mcp_session *s, struct pending_req *p)
{
    pthread_mutex_lock(&s->lock);
    p->next = s->pending;
    s->pending = p;
    pthread_mutex_unlock(&s->lock);
}

void mcp_session_pending_remove(struct mcp_session *s, struct pending_req *p)
{
    struct pending_req **pp = NULL;

    pthread_mutex_lock(&s->lock);
    for (pp = &s->pending; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

bool mcp_deliver_response(struct mcp_session *s, const char *id_key,
                          cJSON *result, cJSON *error)
{
    struct pending_req *p = NULL;
    bool found = false;

    pthread_mutex_lock(&s->lock);
    for (p = s->pending; p != NULL; p = p->next) {
        if (strcmp(p->id_key, id_key) != 0)
            continue;
        pthread_mutex_lock(&p->call->lock);
        if (!p->done) {
            p->result = result;
            p->error = error;
            result = NULL;
            error = NULL;
            p->done = true;
            pthread_cond_broadcast(&p->call->cond);
            found = true;
        }
        pthread_mutex_unlock(&p->call->lock);
        break;
    }
    pthread_mutex_unlock(&s->lock);
    cJSON_Delete(result);
    cJSON_Delete(error);
    return found;
}

void mcp_session_set_notify(struct mcp_session *s, struct mcp_sink *sink)
{
    struct mcp_dispatcher *d = s->d;

    sink->retain(sink);
    pthread_mutex_lock(&s->lock);
    if (s->notify != NULL)
        s->notify->release(s->notify);
    s->notify = sink;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&d->sess_lock);
    if (!s->in_notify_list) {
        DLIST_PUSH(d->notify_sessions, s, n_prev, n_next);
        s->in_notify_list = true;
    }
    pthread_mutex_unlock(&d->sess_lock);
}

static void notify_list_remove(struct mcp_session *s)
{
    struct mcp_dispatcher *d = s->d;

    pthread_mutex_lock(&d->sess_lock);
    if (s->in_notify_list) {
        DLIST_UNLINK(d->notify_sessions, s, n_prev, n_next);
        s->in_notify_list = false;
    }
    pthread_mutex_unlock(&d->sess_lock);
}

/* The sessions to notify, referenced; NULL-terminated, or NULL. */
static struct mcp_session **notify_targets(struct mcp_dispatcher *d)
{
    struct mcp_session **v = NULL;
    struct mcp_session *s = NULL;
    size_t n = 0;

    pthread_mutex_lock(&d->sess_lock);
    for (s = d->notify_sessions; s != NULL; s = s->n_next)
        n++;
    v = calloc(n + 1, sizeof(*v));
    n = 0;
    for (s = d->notify_sessions; s != NULL && v != NULL; s = s->n_next) {
        mcp_session_ref(s);
        v[n++] = s;
    }
    pthread_mutex_unlock(&d->sess_lock);
    return v;
}

/* Send json to s's notify sink if it is initialised and open. */
static bool notify_session(struct mcp_session *s, const char *json)
{
    struct mcp_sink *out = NULL;

    pthread_mutex_lock(&s->lock);
    if (s->initialized && !s->closed && s->notify != NULL) {
        out = s->notify;
        out->retain(out);
    }
    pthread_mutex_unlock(&s->lock);
    if (out == NULL)
        return false;
    out->send(out, json, strlen(json), false);
    out->release(out);
    return true;
}

int mcp_listen_register(struct mcp_session *s, struct listen_sink *ls,
                        struct mcp_sink *sink)
{
    struct mcp_dispatcher *d = s->d;
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    if (s->listen != NULL || s->notify != NULL || s->closed) {
        pthread_mutex_unlock(&s->lock);
        return -3;
    }
    sink->retain(sink);
    s->listen = ls;
    s->notify = sink;
    pthread_mutex_unlock(&s->lock);
    /* Checked and linked under one lock: listen_end_all misses none. */
    pthread_mutex_lock(&d->sess_lock);
    if (d->listens_closed)
        rc = -1;
    else if (d->n_listens >= LISTEN_MAX_STREAMS)
        rc = -2;
    if (rc == 0) {
        d->n_listens++;
        DLIST_PUSH(d->notify_sessions, s, n_prev, n_next);
        s->in_notify_list = true;
    }
    pthread_mutex_unlock(&d->sess_lock);
    if (rc == 0)
        return 0;
    pthread_mutex_lock(&s->lock);
    s->listen = NULL;
    s->notify = NULL;
    pthread_mutex_unlock(&s->lock);
    sink->release(sink);
    return rc;
}

void mcp_listen_count_down(struct mcp_dispatcher *d)
{
    pthread_mutex_lock(&d->sess_lock);
    if (d->n_listens > 0)
        d->n_listens--;
    pthread_mutex_unlock(&d->sess_lock);
}

struct mcp_session **mcp_listen_close(struct mcp_dispatcher *d)
{
    pthread_mutex_lock(&d->sess_lock);
    d->listens_closed = true;
    pthread_mutex_unlock(&d->sess_lock);
    return notify_targets(d);
}

unsigned mcp_notify_list_changed(struct mcp_dispatcher *d, const char *list)
{
    struct mcp_session **v = notify_targets(d);
    unsigned sent = 0;
    char json[128];
    size_t i;

    snprintf(json, sizeof(json),
             "{\"jsonrpc\":\"2.0\",\"method\":"
             "\"notifications/%s/list_changed\"}",
             list);
    if (v == NULL) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "out of memory: notifications/%s/list_changed not sent", list);
        return 0;
    }
    for (i = 0; v[i] != NULL; i++) {
        if (notify_session(v[i], json))
            sent++;
        mcp_session_unref(v[i]);
    }
    free(v);
    return sent;
}

unsigned mcp_notify_tools_changed(struct mcp_dispatcher *d)
{
    return mcp_notify_list_changed(d, "tools");
}

void mcp_session_ref(struct mcp_session *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void mcp_session_unref(struct mcp_session *s)
{
    size_t i;

    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (i = 0; i < s->n_subs; i++)
        free(s->subs[i]);
    free(s->subs);
    for (i = 0; i < s->n_toolsets_on; i++)
        free(s->toolsets_on[i]);
    free(s->toolsets_on);
    if (s->notify != NULL)
        s->notify->release(s->notify);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Referenced copies of the session's calls (caller unrefs, frees). */
static struct rlmcp_call **session_calls(struct mcp_session *s, size_t *n)
{
    struct rlmcp_call **v = NULL;
    struct rlmcp_call *c;
    size_t count = 0;

    for (c = s->calls; c != NULL; c = c->s_next)
        count++;
    v = calloc(count + 1, sizeof(*v));
    *n = 0;
    if (v == NULL)
        return NULL;
    for (c = s->calls; c != NULL; c = c->s_next) {
        call_ref(c);
        v[(*n)++] = c;
    }
    return v;
}

void mcp_session_free(struct mcp_session *s)
{
    struct rlmcp_call **calls = NULL;
    size_t n = 0;
    size_t i;

    if (s == NULL)
        return;
    notify_list_remove(s);
    listen_session_end(s);
    pthread_mutex_lock(&s->lock);
    s->closed = true;
    calls = session_calls(s, &n);
    pthread_mutex_unlock(&s->lock);
    resources_watch_session(s->d->watch, s);
    for (i = 0; i < n; i++) {
        call_cancel(calls[i], CANCEL_CLIENT);
        call_unref(calls[i]);
    }
    free(calls);
    mcp_session_unref(s);
}

bool mcp_session_initialized(const struct mcp_session *s)
{
    bool v;

    pthread_mutex_lock((pthread_mutex_t *)&s->lock);
    v = s->initialized;
    pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
    return v;
}

const char *mcp_session_protocol_version(const struct mcp_session *s)
{
    /* version is written once, before initialized is set. */
    return mcp_session_initialized(s) ? s->version : NULL;
}

/* ---- call bookkeeping --------------------------------------------------- */

void mcp_unlink_call_session(struct rlmcp_call *c)
{
    struct mcp_session *s = c->s;

    pthread_mutex_lock(&s->lock);
    if (c->in_session) {
        DLIST_UNLINK(s->calls, c, s_prev, s_next);
        c->in_session = false;
    }
    pthread_mutex_unlock(&s->lock);
}

void mcp_unlink_call(struct rlmcp_call *c)
{
    struct mcp_dispatcher *d = c->d;

    mcp_unlink_call_session(c);
    pthread_mutex_lock(&d->lock);
    if (c->in_dispatcher) {
        DLIST_UNLINK(d->inflight, c, d_prev, d_next);
        c->in_dispatcher = false;
        d->n_inflight--;
        if (d->n_inflight == 0)
            pthread_cond_broadcast(&d->idle_cond);
    }
    pthread_mutex_unlock(&d->lock);
}

static struct rlmcp_call *find_call(struct mcp_session *s, const char *key)
{
    struct rlmcp_call *c;

    for (c = s->calls; c != NULL; c = c->s_next) {
        if (strcmp(c->id_key, key) == 0)
            return c;
    }
    return NULL;
}

static unsigned session_call_count(const struct mcp_session *s)
{
    const struct rlmcp_call *c;
    unsigned n = 0;

    for (c = s->calls; c != NULL; c = c->s_next)
        n++;
    return n;
}

/* Calls that may wait long run on their own threads, so a short call
 * never queues behind them (docs/protocol.md "Concurrency"). */
static struct pool *call_pool(struct mcp_dispatcher *d,
                              const struct rlmcp_call *c)
{
    if (c->tool != NULL && (c->tool->flags & RLMCP_TOOL_LONG))
        return d->long_pool;
    return d->pool;
}

/* Link the call and hand it to the pool; always consumes c. */
static void enqueue(struct req *r, struct rlmcp_call *c)
{
    mcp_enqueue_call(r->d, r->s, c);
}

void mcp_enqueue_call(struct mcp_dispatcher *d, struct mcp_session *s,
                      struct rlmcp_call *c)
{
    char msg[256];

    pthread_mutex_lock(&s->lock);
    if (find_call(s, c->id_key) != NULL) {
        pthread_mutex_unlock(&s->lock);
        snprintf(msg, sizeof(msg),
                 "request id %.64s is already used by a request in "
                 "progress; use a new id",
                 c->id_key);
        call_fail(c, JSONRPC_INVALID_REQUEST, msg);
        call_unref(c);
        return;
    }
    /* Calls wait in the pool's queue; a client that keeps sending them
     * without reading results must not grow it without bound. */
    if (session_call_count(s) >= MCP_MAX_SESSION_CALLS) {
        pthread_mutex_unlock(&s->lock);
        snprintf(msg, sizeof(msg),
                 "too many requests in progress on this session (limit "
                 "%u); wait for results or cancel some, then retry",
                 MCP_MAX_SESSION_CALLS);
        call_fail(c, JSONRPC_SERVER_BUSY, msg);
        call_unref(c);
        return;
    }
    DLIST_PUSH(s->calls, c, s_prev, s_next);
    c->in_session = true;
    pthread_mutex_unlock(&s->lock);

    pthread_mutex_lock(&d->lock);
    if (d->draining) {
        pthread_mutex_unlock(&d->lock);
        goto refuse;
    }
    if (c->timeout_ms > 0)
        c->deadline_ns =
            deadline_now_ns() + (uint64_t)c->timeout_ms * 1000000ull;
    DLIST_PUSH(d->inflight, c, d_prev, d_next);
    c->in_dispatcher = true;
    d->n_inflight++;
    pthread_cond_signal(&d->timer_cond);
    pthread_mutex_unlock(&d->lock);

    if (pool_submit(call_pool(d, c), call_job, c) == 0)
        return;
refuse:
    call_fail(c, JSONRPC_INTERNAL_ERROR,
              "the server is shutting down; no new calls are taken");
    mcp_unlink_call(c);
    call_unref(c);
}

static struct rlmcp_call *new_call(struct req *r, enum call_kind kind)
{
    const char *key = r->ctx != NULL ? r->ctx->api_key : NULL;
    struct rlmcp_call *c =
        call_new(r->d, r->dep, r->s, r->sink, kind, r->m->id, key);

    if (c == NULL)
        reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
    else if (r->dep->call_timeout_ms != 0)
        c->timeout_ms = r->dep->call_timeout_ms;
    else
        c->timeout_ms = r->d->default_timeout_ms;
    return c;
}

/* ---- initialize, ping, logging ------------------------------------------ */

/* Tasks: 2025-11-25's experimental capability, 2026-07-28's extension. */
static void task_capabilities(cJSON *caps, bool stateless)
{
    cJSON *o = NULL;

    if (stateless) {
        o = cJSON_AddObjectToObject(caps, "extensions");
        cJSON_AddObjectToObject(o, TASKS_EXTENSION);
        return;
    }
    o = cJSON_AddObjectToObject(caps, "tasks");
    cJSON_AddObjectToObject(o, "list");
    cJSON_AddObjectToObject(o, "cancel");
    o = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "requests"),
                                "tools");
    cJSON_AddObjectToObject(o, "call");
}

/*
 * tools.listChanged: a reload (SIGHUP) may change the tools. In 2026-07-28
 * both it and resources.subscribe are delivered on a subscriptions/listen
 * stream (listen.h) instead of the GET stream and resources/subscribe.
 */
static cJSON *server_capabilities(const struct deployment *dep, bool stateless)
{
    cJSON *caps = cJSON_CreateObject();
    cJSON *o = NULL;

    o = cJSON_AddObjectToObject(caps, "tools");
    cJSON_AddBoolToObject(o, "listChanged", true);
    cJSON_AddObjectToObject(caps, "logging");
    cJSON_AddObjectToObject(caps, "completions");
    if (registry_resource_count(dep->reg) > 0) {
        o = cJSON_AddObjectToObject(caps, "resources");
        cJSON_AddBoolToObject(o, "subscribe", true);
        cJSON_AddBoolToObject(o, "listChanged", true);
    }
    if (registry_prompt_count(dep->reg) > 0) {
        o = cJSON_AddObjectToObject(caps, "prompts");
        cJSON_AddBoolToObject(o, "listChanged", true);
    }
    if (dep->has_tasks)
        task_capabilities(caps, stateless);
    return caps;
}

static bool has_object(const cJSON *caps, const char *name)
{
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, name));
}

static void m_initialize(struct req *r)
{
    const cJSON *pv = param(r, "protocolVersion");
    const cJSON *caps = param(r, "capabilities");
    const cJSON *client =
        cJSON_GetObjectItemCaseSensitive(param(r, "clientInfo"), "name");
    const char *version = supported_versions[0];
    cJSON *res = NULL;
    cJSON *info = NULL;

    if (r->params == NULL) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "initialize needs params {protocolVersion, "
                    "capabilities, clientInfo}");
        return;
    }
    if (!cJSON_IsString(pv)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.protocolVersion must be a string such as \"%s\"",
                    supported_versions[0]);
        return;
    }
    if (caps != NULL && !cJSON_IsObject(caps)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.capabilities must be an object");
        return;
    }
    /* Echo a version we speak, else offer our latest (lifecycle spec). */
    if (mcp_protocol_version_supported(pv->valuestring))
        version = pv->valuestring;
    pthread_mutex_lock(&r->s->lock);
    if (r->s->initialized) {
        pthread_mutex_unlock(&r->s->lock);
        reply_error(r, JSONRPC_INVALID_REQUEST,
                    "the session is already initialized; send initialize "
                    "once per session");
        return;
    }
    snprintf(r->s->version, sizeof(r->s->version), "%s", version);
    r->s->cap_sampling = has_object(caps, "sampling");
    r->s->cap_elicitation = has_object(caps, "elicitation");
    r->s->cap_roots = has_object(caps, "roots");
    if (cJSON_IsString(client))
        snprintf(r->s->client_name, sizeof(r->s->client_name), "%s",
                 client->valuestring);
    r->s->initialized = true;
    pthread_mutex_unlock(&r->s->lock);

    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "protocolVersion", version);
    cJSON_AddItemToObject(res, "capabilities",
                          server_capabilities(r->dep, false));
    info = cJSON_AddObjectToObject(res, "serverInfo");
    cJSON_AddStringToObject(info, "name", r->d->server_name);
    cJSON_AddStringToObject(info, "version", r->d->server_version);
    if (r->d->instructions != NULL)
        cJSON_AddStringToObject(res, "instructions", r->d->instructions);
    reply(r, res);
}

static void m_ping(struct req *r)
{
    reply(r, cJSON_CreateObject());
}

/* server/discover (2026-07-28): what initialize answered before. */
static void m_discover(struct req *r)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *versions = cJSON_AddArrayToObject(res, "supportedVersions");
    cJSON *meta = NULL;
    cJSON *info = NULL;
    size_t i;

    for (i = 0; i < rev_n_supported; i++)
        cJSON_AddItemToArray(versions, cJSON_CreateString(rev_supported[i]));
    cJSON_AddItemToObject(res, "capabilities",
                          server_capabilities(r->dep, true));
    if (r->d->instructions != NULL)
        cJSON_AddStringToObject(res, "instructions", r->d->instructions);
    meta = cJSON_AddObjectToObject(res, "_meta");
    info = cJSON_AddObjectToObject(meta, REV_META_SERVER_INFO);
    cJSON_AddStringToObject(info, "name", r->d->server_name);
    cJSON_AddStringToObject(info, "version", r->d->server_version);
    reply(r, res);
}

static void m_set_level(struct req *r)
{
    const cJSON *level = param(r, "level");
    int v = -1;

    if (cJSON_IsString(level))
        v = log_level_parse(level->valuestring);
    if (v < 0) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.level must be one of debug, info, notice, "
                    "warning, error, critical, alert, emergency");
        return;
    }
    atomic_store(&r->s->log_level, v);
    reply(r, cJSON_CreateObject());
}

static void m_complete(struct req *r)
{
    const cJSON *ref = param(r, "ref");
    const cJSON *arg = param(r, "argument");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ref, "type");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(arg, "name");
    const cJSON *value = NULL;
    const char *key = NULL;

    if (!cJSON_IsObject(ref) || !cJSON_IsString(type) ||
        (strcmp(type->valuestring, "ref/prompt") != 0 &&
         strcmp(type->valuestring, "ref/resource") != 0)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.ref must be {type: \"ref/prompt\", name} or "
                    "{type: \"ref/resource\", uri}");
        return;
    }
    if (!cJSON_IsObject(arg) || !cJSON_IsString(name)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.argument must be {name, value}");
        return;
    }
    value = cJSON_GetObjectItemCaseSensitive(arg, "value");
    if (value != NULL && !cJSON_IsString(value)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.argument.value must be a string (what is typed "
                    "so far)");
        return;
    }
    key = r->ctx != NULL ? r->ctx->api_key : NULL;
    if (key == NULL)
        key = r->d->default_key;
    complete_answer(r->d->pool, r->d->rl, r->sink, r->m->id,
                    complete_kind_of(name->valuestring),
                    cJSON_IsString(value) ? value->valuestring : "", key);
}

/* ---- pagination --------------------------------------------------------- */

/* Cursors are "c<offset>": opaque to clients, checked strictly here. */
static bool parse_cursor(struct req *r, size_t count, size_t page,
                         size_t *offset)
{
    const cJSON *cursor = param(r, "cursor");
    const char *s = NULL;
    char *end = NULL;
    unsigned long long v;

    *offset = 0;
    if (cursor == NULL || cJSON_IsNull(cursor))
        return true;
    if (!cJSON_IsString(cursor))
        goto bad;
    s = cursor->valuestring;
    if (s[0] != 'c' || s[1] < '0' || s[1] > '9')
        goto bad;
    errno = 0;
    v = strtoull(s + 1, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v >= count || v % page != 0)
        goto bad;
    *offset = (size_t)v;
    return true;
bad:
    reply_error(r, JSONRPC_INVALID_PARAMS,
                "invalid params.cursor; pass the nextCursor of the previous "
                "page unchanged, or omit it for the first page");
    return false;
}

static void add_next_cursor(cJSON *res, size_t next, size_t count)
{
    char buf[32];

    if (next >= count)
        return;
    snprintf(buf, sizeof(buf), "c%zu", next);
    cJSON_AddStringToObject(res, "nextCursor", buf);
}

/*
 * Does this session see only its enabled toolsets (toolsets.h)? *mask:
 * those. False: it gets every tool (no toolsets, a stateless request, or
 * a client of tools.full_list_clients).
 */
static bool session_toolsets(const struct req *r, uint64_t *mask)
{
    const struct toolsets *ts = registry_toolsets(r->dep->reg);
    struct mcp_session *s = r->s;
    bool dynamic = false;

    *mask = 0;
    if (ts == NULL || r->stateless)
        return false;
    pthread_mutex_lock(&s->lock);
    dynamic = !toolsets_full_list_client(
        ts, s->client_name[0] != '\0' ? s->client_name : NULL);
    *mask = toolsets_mask(ts, s->toolsets_on, s->n_toolsets_on);
    pthread_mutex_unlock(&s->lock);
    return dynamic;
}

/* tools/list of a session with toolsets: its own view, joined per call. */
static void tools_list_view(struct req *r, uint64_t mask)
{
    size_t count = 0;
    const char **v = toolsets_view(r->dep->reg, mask, &count);
    struct strbuf b = {0};
    size_t offset = 0;
    size_t i = 0;
    char *id = NULL;
    char *json = NULL;
    char next[48] = "";
    int rc = 0;

    if (v == NULL) {
        reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    if (!parse_cursor(r, count, r->d->page_size, &offset))
        goto out;
    if (offset + r->d->page_size < count)
        snprintf(next, sizeof(next), ",\"nextCursor\":\"c%zu\"",
                 offset + r->d->page_size);
    rc = strbuf_add(&b, "", 0);
    for (i = offset; rc == 0 && i < count && i < offset + r->d->page_size;
         i++) {
        if (i != offset)
            rc = strbuf_add(&b, ",", 1);
        if (rc == 0)
            rc = strbuf_add(&b, v[i], strlen(v[i]));
    }
    id = jsonrpc_id_key(r->m->id);
    if (rc != 0 || id == NULL ||
        asprintf(
            &json,
            "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[%s]%s}}", id,
            b.p, next) < 0)
        json = NULL;
    mcp_send_final(r->sink, json);
out:
    free(id);
    free(b.p);
    free(v);
}

/* tools/list: a page is pre-joined text, so the answer is a concatenation. */
static void m_tools_list(struct req *r)
{
    struct mcp_dispatcher *d = r->d;
    size_t count = registry_tool_count(r->dep->reg);
    uint64_t mask = 0;
    size_t offset = 0;
    size_t page_no;
    char *id = NULL;
    char *json = NULL;
    char next[48] = "";

    if (session_toolsets(r, &mask)) {
        tools_list_view(r, mask);
        return;
    }
    if (!parse_cursor(r, count, d->page_size, &offset))
        return;
    page_no = offset / d->page_size;
    if (offset + d->page_size < count)
        snprintf(next, sizeof(next), ",\"nextCursor\":\"c%zu\"",
                 offset + d->page_size);
    id = jsonrpc_id_key(r->m->id);
    /* 2026-07-28 fields here, last: the transport then sends it as is. */
    if (id == NULL ||
        asprintf(
            &json,
            "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[%s]%s%s}}",
            id, r->dep->tool_pages[page_no], next,
            r->stateless ? REV_LIST_FIELDS : "") < 0)
        json = NULL;
    free(id);
    mcp_send_final(r->sink, json);
}

static cJSON *resource_item(const struct resource_entry *e)
{
    cJSON *o = cJSON_CreateObject();

    if (e->uri != NULL)
        cJSON_AddStringToObject(o, "uri", e->uri);
    else
        cJSON_AddStringToObject(o, "uriTemplate", e->uri_template);
    cJSON_AddStringToObject(o, "name", e->name);
    if (e->title != NULL)
        cJSON_AddStringToObject(o, "title", e->title);
    if (e->description != NULL)
        cJSON_AddStringToObject(o, "description", e->description);
    if (e->mime_type != NULL)
        cJSON_AddStringToObject(o, "mimeType", e->mime_type);
    return o;
}

/* resources/list (templates false) and resources/templates/list. */
static void list_resources(struct req *r, bool templates)
{
    struct registry *reg = r->dep->reg;
    size_t n = registry_resource_count(reg);
    size_t *idx = calloc(n + 1, sizeof(*idx));
    size_t count = 0;
    size_t offset = 0;
    size_t i;
    cJSON *res = NULL;
    cJSON *arr = NULL;

    if (idx == NULL) {
        reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    for (i = 0; i < n; i++) {
        const struct resource_entry *e = registry_resource_at(reg, i);

        if ((e->uri_template != NULL) == templates)
            idx[count++] = i;
    }
    if (parse_cursor(r, count, r->d->page_size, &offset)) {
        res = cJSON_CreateObject();
        arr = cJSON_AddArrayToObject(res, templates ? "resourceTemplates"
                                                    : "resources");
        for (i = offset; i < count && i < offset + r->d->page_size; i++)
            cJSON_AddItemToArray(
                arr, resource_item(registry_resource_at(reg, idx[i])));
        add_next_cursor(res, offset + r->d->page_size, count);
        reply(r, res);
    }
    free(idx);
}

static void m_resources_list(struct req *r)
{
    list_resources(r, false);
}

static void m_templates_list(struct req *r)
{
    list_resources(r, true);
}

static void m_prompts_list(struct req *r)
{
    struct registry *reg = r->dep->reg;
    size_t count = registry_prompt_count(reg);
    size_t offset = 0;
    size_t i;
    cJSON *res = NULL;
    cJSON *arr = NULL;

    if (!parse_cursor(r, count, r->d->page_size, &offset))
        return;
    res = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(res, "prompts");
    for (i = offset; i < count && i < offset + r->d->page_size; i++) {
        const struct prompt_entry *p = registry_prompt_at(reg, i);
        cJSON *o = cJSON_CreateObject();

        cJSON_AddStringToObject(o, "name", p->name);
        if (p->title != NULL)
            cJSON_AddStringToObject(o, "title", p->title);
        cJSON_AddStringToObject(o, "description",
                                p->description != NULL ? p->description : "");
        if (p->arguments != NULL)
            cJSON_AddItemToObject(o, "arguments",
                                  cJSON_Duplicate(p->arguments, true));
        cJSON_AddItemToArray(arr, o);
    }
    add_next_cursor(res, offset + r->d->page_size, count);
    reply(r, res);
}

/* ---- tools/call --------------------------------------------------------- */

/*
 * A stateless call's input rounds (mrtr.h), from its inputResponses and
 * requestState. *out stays NULL for session calls. False after answering.
 */
static bool stateless_mrtr(struct req *r, const char *kind, const char *target,
                           struct mrtr **out)
{
    char err[512];
    char *key = NULL;

    *out = NULL;
    if (!r->stateless)
        return true;
    if (asprintf(&key, "%s:%s", kind, target) < 0)
        key = NULL;
    err[0] = '\0';
    if (key != NULL)
        *out = mrtr_new(r->params, key, r->ctx != NULL ? r->ctx->api_key : NULL,
                        err, sizeof(err));
    free(key);
    if (*out != NULL)
        return true;
    if (err[0] != '\0')
        reply_error(r, JSONRPC_INVALID_PARAMS, "%s", err);
    else
        reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
    return false;
}

static void reply_tool_error(struct req *r, const struct tool_entry *t,
                             const char *code, const char *message,
                             const char *remedy)
{
    mcp_send_final(r->sink,
                   call_tool_error_json(r->m->id, t, code, message, remedy));
}

/* Rename exposed (aliased) parameter names back to the plugin's own. */
static void unalias(const struct tool_entry *t, cJSON *args)
{
    size_t i;

    for (i = 0; i < t->n_param_aliases; i++) {
        const struct param_alias *a = &t->param_aliases[i];
        cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(args, a->exposed);

        if (v == NULL)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(args, a->original);
        cJSON_AddItemToObject(args, a->original, v);
    }
}

static cJSON *progress_token(const struct req *r)
{
    const cJSON *meta = param(r, "_meta");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");

    if (cJSON_IsString(tok) || cJSON_IsNumber(tok))
        return cJSON_Duplicate(tok, false);
    return NULL;
}

/* Validate and copy the arguments; NULL after answering a tool error. */
static char *tool_arguments(struct req *r, const struct tool_entry *t,
                            size_t *len)
{
    const cJSON *given = param(r, "arguments");
    cJSON *args = NULL;
    char err[512];
    char *json = NULL;

    if (given != NULL && !cJSON_IsNull(given) && !cJSON_IsObject(given)) {
        reply_tool_error(r, t, "invalid_argument",
                         "arguments must be an object of named parameters",
                         "send arguments as a JSON object matching the "
                         "tool's inputSchema (see tools/list)");
        return NULL;
    }
    args = cJSON_IsObject(given) ? cJSON_Duplicate(given, true)
                                 : cJSON_CreateObject();
    if (args == NULL) {
        reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
        return NULL;
    }
    err[0] = '\0';
    if (t->input_schema != NULL &&
        schema_validate(t->input_schema, args, "arguments", err, sizeof(err)) !=
            0) {
        reply_tool_error(r, t, "invalid_argument", err,
                         "fix the arguments to match the tool's inputSchema "
                         "(see tools/list) and call again");
        cJSON_Delete(args);
        return NULL;
    }
    unalias(t, args);
    json = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    if (json == NULL)
        reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
    else
        *len = strlen(json);
    return json;
}

static void task_req(const struct req *r, struct tasks_req *q)
{
    memset(q, 0, sizeof(*q));
    q->d = r->d;
    q->dep = r->dep;
    q->s = r->s;
    q->sink = r->sink;
    q->id = r->m->id;
    q->params = r->params;
    q->api_key = r->ctx != NULL ? r->ctx->api_key : NULL;
    q->stateless = r->stateless;
}

/* -32021: what needs the tasks extension the request did not declare. */
static void reply_needs_tasks(struct req *r, const char *what)
{
    cJSON *data = cJSON_CreateObject();

    cJSON_AddObjectToObject(
        cJSON_AddObjectToObject(
            cJSON_AddObjectToObject(data, "requiredCapabilities"),
            "extensions"),
        TASKS_EXTENSION);
    reply_error_data(r, MCP_MISSING_CLIENT_CAPABILITY, data,
                     "%s needs the %s extension: declare it in "
                     "params._meta[\"%s\"].extensions",
                     what, TASKS_EXTENSION, REV_META_CAPS);
    cJSON_Delete(data);
}

/* tasks/get, tasks/result, tasks/cancel, tasks/list, tasks/update. */
static void m_tasks(struct req *r)
{
    struct tasks_req q;

    /* With a task id it may be a task whose tool a reload removed:
     * tasks_handle says so. */
    if (!r->dep->has_tasks && !cJSON_IsString(param(r, "taskId"))) {
        reply_error(r, JSONRPC_METHOD_NOT_FOUND,
                    "method '%s' not found: no tool of this deployment runs "
                    "as a task",
                    r->m->method);
        return;
    }
    if (r->stateless && !r->s->cap_tasks) {
        reply_needs_tasks(r, r->m->method);
        return;
    }
    if (r->params == NULL && strcmp(r->m->method, "tasks/list") != 0) {
        reply_error(r, JSONRPC_INVALID_PARAMS, "%s needs params {taskId}",
                    r->m->method);
        return;
    }
    task_req(r, &q);
    tasks_handle(&q, r->m->method);
}

/*
 * 2026-07-28 over HTTP: the Mcp-Param-* headers the tool's schema declares
 * agree with the arguments (param_headers.h). False after answering -32020.
 */
static bool param_headers_ok(struct req *r, const struct tool_entry *t)
{
    const cJSON *args = param(r, "arguments");
    char err[512];

    if (!r->stateless || !t->param_headers || r->ctx == NULL ||
        r->ctx->header == NULL)
        return true;
    if (param_headers_check(t->input_schema, cJSON_IsObject(args) ? args : NULL,
                            r->ctx->header, r->ctx->header_user, err,
                            sizeof(err)) == 0)
        return true;
    reply_error(r, MCP_HEADER_MISMATCH, "%s", err);
    return false;
}

/* A tool that runs only as a task, called without asking for one. */
static void reply_task_required(struct req *r, const struct tool_entry *t)
{
    char what[200];

    if (r->stateless) {
        snprintf(what, sizeof(what), "tool '%.128s' (it runs only as a task)",
                 t->name);
        reply_needs_tasks(r, what);
        return;
    }
    reply_error(r, JSONRPC_METHOD_NOT_FOUND,
                "tool '%.128s' runs only as a task (execution.taskSupport "
                "\"required\"): call it with params.task, e.g. "
                "{\"task\": {}}",
                t->name);
}

/* The credentials rule (mcp_set_key_required). */
static bool key_missing(const struct req *r)
{
    bool caller_key = r->ctx != NULL && r->ctx->api_key != NULL;

    return r->d->key_required && r->d->default_key == NULL && !caller_key;
}

/* A meta tool's result: sc as structuredContent and as its text. */
static void reply_structured(struct req *r, cJSON *sc)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *block = cJSON_CreateObject();
    char *text = cJSON_PrintUnformatted(sc);

    cJSON_AddStringToObject(block, "type", "text");
    cJSON_AddStringToObject(block, "text", text != NULL ? text : "");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(res, "content"), block);
    cJSON_AddItemToObject(res, "structuredContent", sc);
    free(text);
    reply(r, res);
}

/* "a, b, c": the toolset names, for error messages. */
static void toolset_names(const struct toolsets *ts, char *out, size_t len)
{
    size_t used = 0;
    size_t i = 0;

    out[0] = '\0';
    for (i = 0; i < ts->n && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s",
                                 i > 0 ? ", " : "", ts->sets[i].name);
}

/* enable_toolset {toolset}: add it to this session's list (toolsets.h). */
static void m_enable_toolset(struct req *r, const struct toolsets *ts)
{
    const cJSON *args = param(r, "arguments");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(args, "toolset");
    const char **names = NULL;
    const char *best = NULL;
    struct mcp_session *s = r->s;
    uint64_t mask = 0;
    bool dynamic = session_toolsets(r, &mask);
    bool changed = false;
    bool already = false;
    char **v = NULL;
    char *dup = NULL;
    char list[1024];
    char msg[1200];
    cJSON *sc = NULL;
    size_t i = 0;
    int at = -1;

    toolset_names(ts, list, sizeof(list));
    if (name != NULL && !cJSON_IsString(name)) {
        snprintf(msg, sizeof(msg),
                 "toolset must be a string (a toolset name): pass "
                 "{\"toolset\": NAME}, one of %s",
                 list);
        reply_tool_error(r, NULL, "invalid_argument", msg,
                         "call enable_toolset again with a toolset name");
        return;
    }
    if (name == NULL) {
        snprintf(msg, sizeof(msg),
                 "the toolset to enable is missing: pass "
                 "{\"toolset\": NAME}, one of %s",
                 list);
        reply_tool_error(r, NULL, "invalid_argument", msg,
                         "call enable_toolset again with a toolset name");
        return;
    }
    at = toolsets_find(ts, name->valuestring);
    if (at < 0) {
        names = calloc(ts->n + 1, sizeof(*names));
        for (i = 0; names != NULL && i < ts->n; i++)
            names[i] = ts->sets[i].name;
        best = names != NULL ? config_suggest(name->valuestring, names) : NULL;
        snprintf(msg, sizeof(msg),
                 "unknown toolset '%.64s'%s%s%s; the toolsets are: %s",
                 name->valuestring, best != NULL ? " (did you mean '" : "",
                 best != NULL ? best : "", best != NULL ? "'?)" : "", list);
        free(names);
        reply_tool_error(r, NULL, "invalid_argument", msg,
                         "call enable_toolset with one of the names listed "
                         "(list_toolsets describes them)");
        return;
    }
    if (dynamic && (mask & (UINT64_C(1) << at)) == 0) {
        dup = strdup(ts->sets[at].name);
        pthread_mutex_lock(&s->lock);
        /* Again under the lock: a concurrent call for the same toolset may
         * have added it since session_toolsets() looked. */
        mask = toolsets_mask(ts, s->toolsets_on, s->n_toolsets_on);
        already = (mask & (UINT64_C(1) << at)) != 0;
        v = dup != NULL && !already
                ? realloc(s->toolsets_on, (s->n_toolsets_on + 1) * sizeof(*v))
                : NULL;
        if (v != NULL) {
            s->toolsets_on = v;
            s->toolsets_on[s->n_toolsets_on++] = dup;
            dup = NULL;
            changed = true;
        }
        pthread_mutex_unlock(&s->lock);
        free(dup);
        if (!changed && !already) {
            reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
            return;
        }
    }
    sc = cJSON_CreateObject();
    cJSON_AddStringToObject(sc, "toolset", ts->sets[at].name);
    cJSON_AddBoolToObject(sc, "enabled", true);
    cJSON_AddBoolToObject(sc, "list_changed", changed);
    cJSON_AddItemToObject(sc, "tools", toolsets_tool_names(r->dep->reg, at));
    if (!dynamic)
        cJSON_AddStringToObject(sc, "note",
                                "every tool is already listed for this "
                                "session");
    /* On the request's own stream, before the answer: it reaches this
     * session alone, also over HTTP without a GET stream. */
    if (changed)
        r->sink->send(r->sink,
                      "{\"jsonrpc\":\"2.0\",\"method\":"
                      "\"notifications/tools/list_changed\"}",
                      strlen("{\"jsonrpc\":\"2.0\",\"method\":"
                             "\"notifications/tools/list_changed\"}"),
                      false);
    reply_structured(r, sc);
}

/* list_toolsets and enable_toolset, answered inline. */
static void m_toolset_call(struct req *r, const struct toolsets *ts,
                           const char *name)
{
    uint64_t mask = 0;
    bool dynamic = false;

    if (strcmp(name, TOOLSETS_ENABLE_TOOL) == 0) {
        m_enable_toolset(r, ts);
        return;
    }
    dynamic = session_toolsets(r, &mask);
    reply_structured(r, toolsets_list_result(r->dep->reg, mask, !dynamic));
}

static void m_tools_call(struct req *r)
{
    const cJSON *name = param(r, "name");
    const struct tool_entry *t = NULL;
    struct rlmcp_call *c = NULL;
    struct mrtr *mr = NULL;
    char *args = NULL;
    size_t len = 0;
    bool as_task = false;

    if (r->params == NULL || !cJSON_IsString(name)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "tools/call needs params {name, arguments}: name must "
                    "be a tool name from tools/list");
        return;
    }
    if (toolsets_is_meta(registry_toolsets(r->dep->reg), name->valuestring)) {
        m_toolset_call(r, registry_toolsets(r->dep->reg), name->valuestring);
        return;
    }
    t = registry_find_tool(r->dep->reg, name->valuestring);
    if (t == NULL) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "unknown tool '%.128s'; call tools/list for the tools "
                    "this server offers",
                    name->valuestring);
        return;
    }
    if (key_missing(r)) {
        reply_tool_error(
            r, t, "unauthenticated",
            "this deployment talks to the Runloop API and has no key of its "
            "own, and the request carried none",
            "send your Runloop API key with every request as "
            "'Authorization: Bearer <key>' or 'X-Runloop-Api-Key: <key>' "
            "(create one at https://platform.runloop.ai/settings), or ask "
            "the operator to set runloop.api_key");
        return;
    }
    if (!param_headers_ok(r, t))
        return;
    as_task = t->has_task &&
              tasks_requested(r->stateless, r->s->cap_tasks, r->params);
    if (!as_task && tasks_required(t)) {
        reply_task_required(r, t);
        return;
    }
    args = tool_arguments(r, t, &len);
    if (args == NULL)
        return;
    if (!stateless_mrtr(r, "tool", t->name, &mr)) {
        free(args);
        return;
    }
    if (as_task) {
        struct tasks_req q;

        task_req(r, &q);
        q.mrtr = mr;
        tasks_tools_call(&q, t, args, len);
        return;
    }
    c = new_call(r, CALL_TOOL);
    if (c == NULL) {
        free(args);
        mrtr_free(mr);
        return;
    }
    call_set_tool(c, t, args, len, mr);
    c->progress_token = progress_token(r);
    if (t->timeout_ms != 0)
        c->timeout_ms = t->timeout_ms;
    c->timeout_ms = deadline_call_ms(c->timeout_ms, t->timeout_arg, args, len);
    enqueue(r, c);
}

/* ---- resources ---------------------------------------------------------- */

/* params.uri of a known resource, or NULL after answering an error. */
static const char *resource_uri(struct req *r,
                                const struct resource_entry **entry)
{
    const cJSON *uri = param(r, "uri");
    cJSON *data = NULL;

    if (!cJSON_IsString(uri)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.uri must be a resource URI (string); see "
                    "resources/list");
        return NULL;
    }
    *entry = resources_find(r->dep->reg, uri->valuestring);
    if (*entry == NULL) {
        data = cJSON_CreateObject();
        cJSON_AddStringToObject(data, "uri", uri->valuestring);
        reply_error_data(r, MCP_RESOURCE_NOT_FOUND, data,
                         "resource not found: %.512s; see resources/list",
                         uri->valuestring);
        cJSON_Delete(data);
        return NULL;
    }
    return uri->valuestring;
}

static void m_resources_read(struct req *r)
{
    const struct resource_entry *e = NULL;
    const char *uri = resource_uri(r, &e);
    struct rlmcp_call *c = NULL;
    struct mrtr *mr = NULL;

    if (uri == NULL || !stateless_mrtr(r, "resource", uri, &mr))
        return;
    c = new_call(r, CALL_RESOURCE);
    if (c == NULL) {
        mrtr_free(mr);
        return;
    }
    c->mrtr = mr;
    c->resource = e;
    c->uri = strdup(uri);
    c->what = c->uri;
    c->plugin = e->plugin;
    c->plugin_name = e->plugin != NULL ? e->plugin->name : NULL;
    if (c->uri == NULL) {
        call_fail(c, JSONRPC_INTERNAL_ERROR, "out of memory");
        call_unref(c);
        return;
    }
    enqueue(r, c);
}

static void m_subscribe(struct req *r)
{
    const struct resource_entry *e = NULL;
    const char *uri = resource_uri(r, &e);
    struct mcp_session *s = r->s;
    char **grown = NULL;
    size_t i;

    if (uri == NULL)
        return;
    if ((e->flags & RLMCP_RESOURCE_SUBSCRIBABLE) && r->d->watch != NULL &&
        resources_watch_add(r->d->watch, s, uri,
                            r->ctx != NULL ? r->ctx->api_key : NULL) != 0) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "this session already watches %u resources; "
                    "unsubscribe from some first",
                    RES_WATCH_MAX_PER_SESSION);
        return;
    }
    pthread_mutex_lock(&s->lock);
    for (i = 0; i < s->n_subs; i++) {
        if (strcmp(s->subs[i], uri) == 0)
            break;
    }
    if (i == s->n_subs) {
        grown = realloc(s->subs, (s->n_subs + 1) * sizeof(*s->subs));
        if (grown != NULL) {
            s->subs = grown;
            s->subs[s->n_subs] = strdup(uri);
            if (s->subs[s->n_subs] != NULL)
                s->n_subs++;
        }
    }
    pthread_mutex_unlock(&s->lock);
    reply(r, cJSON_CreateObject());
}

static void m_unsubscribe(struct req *r)
{
    const cJSON *uri = param(r, "uri");
    struct mcp_session *s = r->s;
    size_t i;

    if (!cJSON_IsString(uri)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.uri must be the URI passed to "
                    "resources/subscribe");
        return;
    }
    resources_watch_remove(r->d->watch, s, uri->valuestring);
    pthread_mutex_lock(&s->lock);
    for (i = 0; i < s->n_subs; i++) {
        if (strcmp(s->subs[i], uri->valuestring) == 0) {
            free(s->subs[i]);
            s->subs[i] = s->subs[--s->n_subs];
            break;
        }
    }
    pthread_mutex_unlock(&s->lock);
    reply(r, cJSON_CreateObject());
}

/* ---- prompts ------------------------------------------------------------ */

/* Every value a string, every required argument present. */
static bool prompt_args_ok(struct req *r, const struct prompt_entry *p,
                           const cJSON *args)
{
    const cJSON *a = NULL;

    cJSON_ArrayForEach(a, args)
    {
        if (!cJSON_IsString(a)) {
            reply_error(r, JSONRPC_INVALID_PARAMS,
                        "argument '%.128s' of prompt '%.128s' must be a "
                        "string",
                        a->string, p->name);
            return false;
        }
    }
    cJSON_ArrayForEach(a, p->arguments)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "name");

        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "required")) ||
            !cJSON_IsString(name))
            continue;
        if (cJSON_GetObjectItemCaseSensitive(args, name->valuestring) == NULL) {
            reply_error(r, JSONRPC_INVALID_PARAMS,
                        "prompt '%.128s' needs argument '%.128s'; see "
                        "prompts/list",
                        p->name, name->valuestring);
            return false;
        }
    }
    return true;
}

static void m_prompts_get(struct req *r)
{
    const cJSON *name = param(r, "name");
    const cJSON *args = param(r, "arguments");
    const struct prompt_entry *p = NULL;
    struct rlmcp_call *c = NULL;
    struct mrtr *mr = NULL;
    cJSON *empty = NULL;
    char *json = NULL;

    if (!cJSON_IsString(name)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.name must be a prompt name from prompts/list");
        return;
    }
    p = registry_find_prompt(r->dep->reg, name->valuestring);
    if (p == NULL) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "unknown prompt '%.128s'; call prompts/list",
                    name->valuestring);
        return;
    }
    if (args != NULL && !cJSON_IsNull(args) && !cJSON_IsObject(args)) {
        reply_error(r, JSONRPC_INVALID_PARAMS,
                    "params.arguments must be an object of strings");
        return;
    }
    if (!cJSON_IsObject(args))
        args = empty = cJSON_CreateObject();
    if (!prompt_args_ok(r, p, args)) {
        cJSON_Delete(empty);
        return;
    }
    json = cJSON_PrintUnformatted(args);
    cJSON_Delete(empty);
    if (json != NULL && !stateless_mrtr(r, "prompt", p->name, &mr)) {
        free(json);
        return;
    }
    c = json != NULL ? new_call(r, CALL_PROMPT) : NULL;
    if (c == NULL) {
        if (json == NULL)
            reply_error(r, JSONRPC_INTERNAL_ERROR, "out of memory");
        free(json);
        mrtr_free(mr);
        return;
    }
    c->mrtr = mr;
    c->prompt = p;
    c->what = p->name;
    c->plugin = p->plugin;
    c->plugin_name = p->plugin != NULL ? p->plugin->name : NULL;
    c->args_json = json;
    c->args_len = strlen(json);
    enqueue(r, c);
}

/* subscriptions/listen (2026-07-28): the stream of notifications. */
static void m_listen(struct req *r)
{
    listen_open(r->d, r->s, r->dep, r->sink, r->m->id, r->params,
                r->ctx != NULL ? r->ctx->api_key : NULL);
}

/* ---- dispatch ----------------------------------------------------------- */

/* Which revisions offer a method. */
enum method_rev { REV_ALL = 0, REV_SESSION, REV_STATELESS };

struct method {
    const char *name;
    void (*fn)(struct req *r);
    bool needs_init;
    enum method_rev rev;
};

static const struct method methods[] = {
    {"initialize", m_initialize, false, REV_SESSION},
    {"ping", m_ping, false, REV_SESSION},
    {"server/discover", m_discover, false, REV_STATELESS},
    {"tools/list", m_tools_list, true, REV_ALL},
    {"tools/call", m_tools_call, true, REV_ALL},
    {"logging/setLevel", m_set_level, true, REV_SESSION},
    {"resources/list", m_resources_list, true, REV_ALL},
    {"resources/templates/list", m_templates_list, true, REV_ALL},
    {"resources/read", m_resources_read, true, REV_ALL},
    {"resources/subscribe", m_subscribe, true, REV_SESSION},
    {"resources/unsubscribe", m_unsubscribe, true, REV_SESSION},
    {"prompts/list", m_prompts_list, true, REV_ALL},
    {"prompts/get", m_prompts_get, true, REV_ALL},
    {"completion/complete", m_complete, true, REV_ALL},
    {"tasks/get", m_tasks, true, REV_ALL},
    {"tasks/cancel", m_tasks, true, REV_ALL},
    {"tasks/result", m_tasks, true, REV_SESSION},
    {"tasks/list", m_tasks, true, REV_SESSION},
    {"tasks/update", m_tasks, true, REV_STATELESS},
    {"subscriptions/listen", m_listen, true, REV_STATELESS},
};

static const struct method *find_method(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(methods) / sizeof(*methods); i++) {
        if (strcmp(methods[i].name, name) == 0)
            return &methods[i];
    }
    return NULL;
}

/*
 * A stateless request: its _meta is its session's facts. False after
 * answering an error (missing or bad _meta, unsupported version).
 */
static bool stateless_prepare(struct req *r)
{
    struct rev_meta meta;
    struct mcp_session *s = r->s;
    cJSON *data = NULL;
    char err[512];
    int code;

    code = rev_meta_check(r->params, &meta, err, sizeof(err), &data);
    if (code != 0) {
        reply_error_data(r, code, data, "%s", err);
        cJSON_Delete(data);
        return false;
    }
    pthread_mutex_lock(&s->lock);
    snprintf(s->version, sizeof(s->version), "%s", MCP_REV_STATELESS);
    s->cap_sampling = meta.cap_sampling;
    s->cap_elicitation = meta.cap_elicitation;
    s->cap_roots = meta.cap_roots;
    s->cap_tasks = meta.cap_tasks;
    s->initialized = true;
    pthread_mutex_unlock(&s->lock);
    atomic_store(&s->log_level, meta.log_level);
    return true;
}

static void handle_request(struct req *r)
{
    const struct method *m = find_method(r->m->method);
    enum method_rev not_here = r->stateless ? REV_SESSION : REV_STATELESS;

    if (m == NULL || m->rev == not_here) {
        reply_error(r, JSONRPC_METHOD_NOT_FOUND,
                    "method '%.128s' not found in MCP %s; this server "
                    "speaks %s",
                    r->m->method,
                    r->stateless ? MCP_REV_STATELESS : "2025-11-25",
                    r->stateless ? "server/discover, tools/list, "
                                   "tools/call, resources/*, prompts/*, "
                                   "completion/complete"
                                 : "initialize, ping, tools/list, "
                                   "tools/call, ...");
        return;
    }
    if (r->stateless && !stateless_prepare(r))
        return;
    if (m->needs_init && !mcp_session_initialized(r->s)) {
        reply_error(r, JSONRPC_INVALID_REQUEST,
                    "the session is not initialized: send initialize "
                    "first");
        return;
    }
    m->fn(r);
}

static void handle_cancelled(struct mcp_session *s, const cJSON *params)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(params, "requestId");
    struct rlmcp_call *c = NULL;
    char *key = NULL;

    if (!jsonrpc_id_valid(id)) {
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "notifications/cancelled without a valid requestId ignored");
        return;
    }
    key = jsonrpc_id_key(id);
    if (key == NULL)
        return;
    if (listen_cancel(s, key)) {
        free(key);
        return;
    }
    pthread_mutex_lock(&s->lock);
    c = find_call(s, key);
    if (c != NULL)
        call_ref(c);
    pthread_mutex_unlock(&s->lock);
    if (c == NULL) {
        /* Normal race: the call may have just finished. */
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "notifications/cancelled for request %.64s, which is not in "
                "progress: ignored",
                key);
    } else {
        log_msg(RLMCP_LOG_DEBUG, NULL, "request %.64s cancelled by the client",
                key);
        call_cancel(c, CANCEL_CLIENT);
        call_unref(c);
    }
    free(key);
}

static void handle_notification(struct mcp_session *s,
                                const struct jsonrpc_msg *m)
{
    if (strcmp(m->method, "notifications/cancelled") == 0)
        handle_cancelled(s, m->params);
    else if (strcmp(m->method, "notifications/initialized") != 0)
        log_msg(RLMCP_LOG_DEBUG, NULL, "notification '%.128s' ignored",
                m->method);
}

static void handle_response(struct mcp_session *s, struct jsonrpc_msg *m)
{
    cJSON *result = NULL;
    cJSON *error = NULL;
    char *key = NULL;

    if (cJSON_IsNull(m->id)) {
        log_msg(RLMCP_LOG_WARNING, NULL,
                "the client reported an error without a request id");
        return;
    }
    key = jsonrpc_id_key(m->id);
    if (key == NULL)
        return;
    if (m->result != NULL)
        result = cJSON_DetachItemViaPointer(m->root, (cJSON *)m->result);
    else
        error = cJSON_DetachItemViaPointer(m->root, (cJSON *)m->error);
    if (!mcp_deliver_response(s, key, result, error))
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "response %.64s matches no request waiting: ignored", key);
    free(key);
}

bool mcp_handle_msg(struct mcp_dispatcher *d, struct mcp_session *s, cJSON *msg,
                    struct mcp_sink *sink, const struct mcp_request_ctx *ctx)
{
    struct jsonrpc_msg m;
    struct req r;
    struct deployment *dep = NULL;
    cJSON *bad_id = NULL;
    char err[512];
    bool is_request = true;
    int rc = 0;

    /* intake_parse checked it: this reads the fields (and fails only for
     * a message it did not read). */
    rc = jsonrpc_read(msg, &m, &bad_id, err, sizeof(err));
    if (rc != 0) {
        is_request = m.kind != JSONRPC_NOTIFICATION;
        if (is_request)
            mcp_send_final(sink, jsonrpc_error(bad_id, rc, err, NULL));
        goto out;
    }
    dep = mcp_deployment_get(d);
    memset(&r, 0, sizeof(r));
    r.d = d;
    r.dep = dep;
    r.s = s;
    r.sink = sink;
    r.ctx = ctx;
    r.m = &m;
    r.params = m.params;
    r.stateless = ctx != NULL && rev_is_stateless(ctx->revision);
    switch (m.kind) {
    case JSONRPC_REQUEST:
        handle_request(&r);
        break;
    case JSONRPC_NOTIFICATION:
        if (find_method(m.method) != NULL) {
            /* A request without an id: answer so the client learns why. */
            mcp_send_final(sink,
                           jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST,
                                         "this request has no \"id\"; add a "
                                         "string or integer id (only "
                                         "notifications go without one)",
                                         NULL));
            break;
        }
        handle_notification(s, &m);
        is_request = false;
        break;
    case JSONRPC_RESPONSE:
        handle_response(s, &m);
        is_request = false;
        break;
    }
out:
    deployment_unref(dep);
    cJSON_Delete(bad_id);
    m.root = NULL; /* the caller's */
    jsonrpc_msg_free(&m);
    return is_request;
}

bool mcp_handle(struct mcp_dispatcher *d, struct mcp_session *s,
                const char *msg, size_t len, struct mcp_sink *sink,
                const struct mcp_request_ctx *ctx)
{
    struct intake_parsed p;
    bool is_request = true;

    if (!intake_parse(msg, len, &p)) {
        if (p.notification) {
            /* Nobody to answer: a notification never gets a response. */
            log_msg(RLMCP_LOG_DEBUG, NULL, "bad notification ignored: %s",
                    p.err);
            is_request = false;
        } else {
            mcp_send_final(sink, intake_parsed_refusal(&p));
        }
        goto out;
    }
    is_request = mcp_handle_msg(d, s, p.msg, sink, ctx);
out:
    intake_parsed_free(&p);
    return is_request;
}

/* ---- dispatcher life cycle ---------------------------------------------- */

void mcp_timer_kick(struct mcp_dispatcher *d)
{
    pthread_mutex_lock(&d->lock);
    pthread_cond_signal(&d->timer_cond);
    pthread_mutex_unlock(&d->lock);
}

/* Append c (referenced) to the NULL-terminated *v; false when out of
 * memory (retried at the next wake-up). */
static bool due_push(struct rlmcp_call ***v, size_t *n, size_t *cap,
                     struct rlmcp_call *c)
{
    struct rlmcp_call **grown = NULL;

    if (*n + 1 >= *cap) {
        size_t want = *cap != 0 ? *cap * 2 : 8;

        grown = realloc(*v, want * sizeof(**v));
        if (grown == NULL)
            return false;
        *v = grown;
        *cap = want;
    }
    call_ref(c);
    (*v)[(*n)++] = c;
    (*v)[*n] = NULL;
    return true;
}

static void earliest_of(uint64_t *earliest, uint64_t t)
{
    if (*earliest == 0 || t < *earliest)
        *earliest = t;
}

/*
 * Calls past their deadline (*expired), and calls whose held-back progress
 * is due (*flush), referenced; each NULL-terminated, or NULL.
 */
static void due_calls(struct mcp_dispatcher *d, uint64_t now,
                      uint64_t *earliest, struct rlmcp_call ***expired,
                      struct rlmcp_call ***flush)
{
    struct rlmcp_call *c;
    size_t n = 0, cap = 0, nf = 0, capf = 0;

    *earliest = 0;
    *expired = NULL;
    *flush = NULL;
    for (c = d->inflight; c != NULL; c = c->d_next) {
        uint64_t due = atomic_load(&c->progress_due_ns);

        if (due != 0 && due > now)
            earliest_of(earliest, due);
        else if (due != 0 && !due_push(flush, &nf, &capf, c))
            earliest_of(earliest, now + 1000000ull);
        if (c->deadline_ns == 0 || c->timer_fired)
            continue;
        if (c->deadline_ns > now) {
            earliest_of(earliest, c->deadline_ns);
            continue;
        }
        if (!due_push(expired, &n, &cap, c))
            break; /* retried at the next wake-up */
        c->timer_fired = true;
    }
}

static void *timer_main(void *arg)
{
    struct mcp_dispatcher *d = arg;
    struct rlmcp_call **due = NULL;
    struct rlmcp_call **flush = NULL;
    uint64_t earliest = 0;
    uint64_t now = 0;
    size_t i;

    pthread_mutex_lock(&d->lock);
    while (!d->stopping) {
        now = deadline_now_ns();
        due_calls(d, now, &earliest, &due, &flush);
        if (due != NULL || flush != NULL) {
            pthread_mutex_unlock(&d->lock);
            for (i = 0; flush != NULL && flush[i] != NULL; i++) {
                call_flush_progress_due(flush[i]);
                call_unref(flush[i]);
            }
            for (i = 0; due != NULL && due[i] != NULL; i++) {
                call_cancel(due[i], CANCEL_TIMEOUT);
                call_unref(due[i]);
            }
            free(flush);
            free(due);
            pthread_mutex_lock(&d->lock);
            continue;
        }
        if (earliest != 0) {
            deadline_cond_wait(&d->timer_cond, &d->lock, earliest);
        } else {
            pthread_cond_wait(&d->timer_cond, &d->lock);
        }
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* The tools/list entry of a tool when the registry did not serialise it. */
static char *tool_list_json(const struct tool_entry *t)
{
    cJSON *o = cJSON_CreateObject();
    char *s = NULL;

    cJSON_AddStringToObject(o, "name", t->name);
    if (t->title != NULL)
        cJSON_AddStringToObject(o, "title", t->title);
    cJSON_AddStringToObject(o, "description",
                            t->description != NULL ? t->description : "");
    cJSON_AddItemToObject(o, "inputSchema",
                          t->input_schema != NULL
                              ? cJSON_Duplicate(t->input_schema, true)
                              : cJSON_CreateObject());
    if (t->listed_output_schema != NULL)
        cJSON_AddItemToObject(o, "outputSchema",
                              cJSON_Duplicate(t->listed_output_schema, true));
    if (t->annotations != NULL)
        cJSON_AddItemToObject(o, "annotations",
                              cJSON_Duplicate(t->annotations, true));
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* dep's tools/list pages, pre-joined, and whether it offers tasks. */
static int build_tool_pages(const struct mcp_dispatcher *d,
                            struct deployment *dep)
{
    size_t count = registry_tool_count(dep->reg);
    size_t pages = count == 0 ? 1 : (count + d->page_size - 1) / d->page_size;
    size_t p;

    dep->has_tasks = tasks_available(dep->reg);
    if (dep->tool_pages != NULL)
        return 0; /* built when it was first served */
    dep->tool_pages = calloc(pages, sizeof(*dep->tool_pages));
    if (dep->tool_pages == NULL)
        return -1;
    dep->n_tool_pages = pages;
    for (p = 0; p < pages; p++) {
        struct strbuf b = {0};
        size_t i;
        int rc = strbuf_add(&b, "", 0);

        for (i = p * d->page_size;
             rc == 0 && i < count && i < (p + 1) * d->page_size; i++) {
            const struct tool_entry *t = registry_tool_at(dep->reg, i);
            char *own = t->list_json == NULL ? tool_list_json(t) : NULL;
            const char *item = t->list_json != NULL ? t->list_json : own;

            if (item == NULL)
                rc = -1;
            if (rc == 0 && i != p * d->page_size)
                rc = strbuf_add(&b, ",", 1);
            if (rc == 0)
                rc = strbuf_add(&b, item, strlen(item));
            free(own);
        }
        /* Freed with the pages, built or not. */
        dep->tool_pages[p] = b.p;
        if (rc != 0)
            return -1;
    }
    return 0;
}

static void free_fields(struct mcp_dispatcher *d)
{
    free(d->server_name);
    free(d->server_version);
    free(d->instructions);
    secret_free(d->default_key);
}

static char *dup_or(const char *s, const char *fallback)
{
    return strdup(s != NULL ? s : fallback);
}

/* The threads: the worker pools and the timer. 0 or -1 (none left). */
static int start_threads(struct mcp_dispatcher *d)
{
    d->pool = pool_create(d->workers);
    if (d->pool == NULL)
        return -1;
    d->long_pool = pool_create(MCP_LONG_WORKERS);
    if (d->long_pool == NULL) {
        pool_destroy(d->pool);
        return -1;
    }
    if (pthread_create(&d->timer, NULL, timer_main, d) != 0) {
        pool_destroy(d->pool);
        pool_destroy(d->long_pool);
        return -1;
    }
    d->timer_running = true;
    return 0;
}

static void init_locks(struct mcp_dispatcher *d)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->dep_lock, NULL);
    pthread_mutex_init(&d->sess_lock, NULL);
    pthread_cond_init(&d->timer_cond, &attr);
    pthread_cond_init(&d->idle_cond, &attr);
    pthread_condattr_destroy(&attr);
}

static void destroy_locks(struct mcp_dispatcher *d)
{
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->dep_lock);
    pthread_mutex_destroy(&d->sess_lock);
    pthread_cond_destroy(&d->timer_cond);
    pthread_cond_destroy(&d->idle_cond);
}

struct mcp_dispatcher *mcp_create_deployment(const struct mcp_options *opts,
                                             struct deployment *dep)
{
    struct mcp_dispatcher *d = calloc(1, sizeof(*d));

    if (d == NULL)
        return NULL;
    d->server_name = dup_or(opts->server_name, "runloop-mcp");
    d->server_version = dup_or(opts->server_version, RLMCP_VERSION);
    d->instructions =
        opts->instructions != NULL ? strdup(opts->instructions) : NULL;
    d->workers = opts->workers != 0 ? opts->workers : DEFAULT_WORKERS;
    d->default_timeout_ms = opts->default_timeout_ms != 0
                                ? opts->default_timeout_ms
                                : DEFAULT_TIMEOUT_MS;
    d->page_size = opts->page_size != 0 ? opts->page_size : DEFAULT_PAGE_SIZE;
    d->max_message = opts->max_message_bytes != 0 ? opts->max_message_bytes
                                                  : MCP_DEFAULT_MAX_MESSAGE;
    atomic_init(&d->next_request_id, 0);
    init_locks(d);
    if (d->server_name == NULL || d->server_version == NULL ||
        (opts->instructions != NULL && d->instructions == NULL) ||
        build_tool_pages(d, dep) != 0)
        goto fail;
    d->watch = resources_watch_new(d);
    if (d->watch == NULL || start_threads(d) != 0)
        goto fail;
    deployment_ref(dep);
    d->dep = dep;
    return d;
fail:
    log_msg(RLMCP_LOG_ERROR, NULL,
            "cannot create the MCP dispatcher: out "
            "of memory or threads");
    resources_watch_free(d->watch);
    free_fields(d);
    destroy_locks(d);
    free(d);
    return NULL;
}

struct mcp_dispatcher *mcp_create(const struct mcp_options *opts,
                                  struct registry *reg)
{
    struct deployment *dep = deployment_new(reg, NULL, 0);
    struct mcp_dispatcher *d = NULL;

    if (dep == NULL)
        return NULL;
    d = mcp_create_deployment(opts, dep);
    deployment_unref(dep);
    return d;
}

struct deployment *mcp_deployment_get(struct mcp_dispatcher *d)
{
    struct deployment *dep = NULL;

    pthread_mutex_lock(&d->dep_lock);
    dep = d->dep;
    deployment_ref(dep);
    pthread_mutex_unlock(&d->dep_lock);
    return dep;
}

int mcp_replace_deployment(struct mcp_dispatcher *d, struct deployment *dep,
                           struct deployment **old)
{
    *old = NULL;
    if (build_tool_pages(d, dep) != 0)
        return -1;
    deployment_ref(dep);
    pthread_mutex_lock(&d->dep_lock);
    *old = d->dep;
    d->dep = dep;
    pthread_mutex_unlock(&d->dep_lock);
    return 0;
}

void mcp_drain(struct mcp_dispatcher *d, unsigned ms)
{
    struct rlmcp_call **calls = NULL;
    struct rlmcp_call *c;
    uint64_t until = 0;
    size_t n = 0;
    size_t i;

    /* Listen streams end with their result while the transport can still
     * write it (http_server_stop ends them first). */
    listen_end_all(d);
    pthread_mutex_lock(&d->lock);
    d->draining = true;
    calls = calloc(d->n_inflight + 1, sizeof(*calls));
    for (c = d->inflight; c != NULL && calls != NULL; c = c->d_next) {
        call_ref(c);
        calls[n++] = c;
    }
    pthread_mutex_unlock(&d->lock);
    for (i = 0; i < n; i++) {
        call_cancel(calls[i], CANCEL_SHUTDOWN);
        call_unref(calls[i]);
    }
    free(calls);

    until = deadline_now_ns() + (uint64_t)ms * 1000000ull;
    pthread_mutex_lock(&d->lock);
    while (d->n_inflight > 0) {
        if (deadline_cond_wait(&d->idle_cond, &d->lock, until) == ETIMEDOUT)
            break;
    }
    n = d->n_inflight;
    pthread_mutex_unlock(&d->lock);
    if (n > 0)
        log_msg(RLMCP_LOG_WARNING, NULL,
                "%zu call(s) did not stop within %u ms of cancellation", n, ms);
}

unsigned mcp_inflight(struct mcp_dispatcher *d)
{
    unsigned n;

    pthread_mutex_lock(&d->lock);
    n = d->n_inflight;
    pthread_mutex_unlock(&d->lock);
    return n;
}

int mcp_set_state_secret(const unsigned char *key, size_t len)
{
    return mrtr_set_secret(key, len);
}

unsigned mcp_listen_end_all(struct mcp_dispatcher *d)
{
    return listen_end_all(d);
}

void mcp_destroy(struct mcp_dispatcher *d)
{
    if (d == NULL)
        return;
    mcp_drain(d, DESTROY_DRAIN_MS);
    resources_watch_free(d->watch);
    d->watch = NULL;
    pthread_mutex_lock(&d->lock);
    d->stopping = true;
    pthread_cond_broadcast(&d->timer_cond);
    pthread_mutex_unlock(&d->lock);
    if (d->timer_running)
        pthread_join(d->timer, NULL);
    if (!pool_wait_idle(d->pool, 1000) || !pool_wait_idle(d->long_pool, 1000)) {
        /* A handler ignores cancellation: freeing now would crash it. */
        log_msg(RLMCP_LOG_ERROR, NULL,
                "handlers still running at shutdown; leaving them to the "
                "process exit");
        return;
    }
    pool_destroy(d->pool);
    pool_destroy(d->long_pool);
    deployment_unref(d->dep);
    free_fields(d);
    destroy_locks(d);
    free(d);
}

void mcp_set_rlclient(struct mcp_dispatcher *d, struct rlclient *c)
{
    d->rl = c;
}

void mcp_set_default_api_key(struct mcp_dispatcher *d, const char *key)
{
    secret_free(d->default_key);
    d->default_key = key != NULL ? strdup(key) : NULL;
}

void mcp_set_key_required(struct mcp_dispatcher *d, bool required)
{
    d->key_required = required;
}

size_t mcp_max_message(const struct mcp_dispatcher *d)
{
    return d->max_message;
}
