/*
 * listen.c - subscriptions/listen streams (listen.h).
 *
 * Locks: ls->lock orders one stream's messages (the acknowledgement, the
 * notifications, the final answer) and is taken with no other lock held;
 * the session lock and the dispatcher's sess_lock are taken only briefly,
 * never while a sink sends.
 */
#define _GNU_SOURCE
#include "listen.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "dispatch.h"
#include "mcp_internal.h"
#include "registry.h"
#include "resources.h"
#include "revision.h"

struct listen_sink {
    struct mcp_sink sink; /* first: the session's notify sink */
    atomic_int refs;
    struct mcp_dispatcher *d;
    pthread_mutex_t lock; /* the fields below */
    struct mcp_sink *out; /* the listen request's sink; NULL once ended */
    cJSON *id;            /* the listen request's id */
    char *id_key;
    unsigned lists; /* LIST_*: the list_changed notifications asked for */
    bool resources; /* resourceSubscriptions: resources/updated */
};

/* The filter's list flags, each a bit of listen_sink.lists. */
static const char *const list_flags[] = {
    "toolsListChanged", "promptsListChanged", "resourcesListChanged"};
static const char *const list_methods[] = {
    "notifications/tools/list_changed", "notifications/prompts/list_changed",
    "notifications/resources/list_changed"};
#define N_LISTS (sizeof(list_flags) / sizeof(*list_flags))

static void ls_unref(struct listen_sink *ls)
{
    if (atomic_fetch_sub(&ls->refs, 1) != 1)
        return;
    cJSON_Delete(ls->id);
    free(ls->id_key);
    pthread_mutex_destroy(&ls->lock);
    free(ls);
}

static void ls_retain(struct mcp_sink *sink)
{
    atomic_fetch_add(&((struct listen_sink *)sink)->refs, 1);
}

static void ls_release(struct mcp_sink *sink)
{
    ls_unref((struct listen_sink *)sink);
}

/* Does the filter let a notification of this method through? */
static bool ls_wants(const struct listen_sink *ls, const char *method)
{
    size_t i;

    for (i = 0; i < N_LISTS; i++) {
        if (strcmp(method, list_methods[i]) == 0)
            return (ls->lists & (1u << i)) != 0;
    }
    if (strcmp(method, "notifications/resources/updated") == 0)
        return ls->resources;
    return false; /* a type the client did not ask for */
}

/* params._meta[subscriptionId] = the listen request's id. */
static void tag(cJSON *msg, const cJSON *id)
{
    cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    cJSON *meta = NULL;

    if (!cJSON_IsObject(params)) {
        cJSON_DeleteItemFromObjectCaseSensitive(msg, "params");
        params = cJSON_AddObjectToObject(msg, "params");
    }
    meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    if (!cJSON_IsObject(meta)) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
        meta = cJSON_AddObjectToObject(params, "_meta");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(meta, REV_META_SUBSCRIPTION);
    cJSON_AddItemToObject(meta, REV_META_SUBSCRIPTION, cJSON_Duplicate(id, 1));
}

/* A notification for the session: filtered, tagged, onto the stream. */
static void ls_send(struct mcp_sink *sink, const char *json, size_t len,
                    bool final)
{
    struct listen_sink *ls = (struct listen_sink *)sink;
    cJSON *msg = NULL;
    const cJSON *method = NULL;
    char *out = NULL;

    (void) final;
    if (json == NULL)
        return;
    msg = cJSON_ParseWithLength(json, len);
    method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    if (!cJSON_IsString(method) || !ls_wants(ls, method->valuestring))
        goto out;
    pthread_mutex_lock(&ls->lock);
    if (ls->out != NULL) {
        tag(msg, ls->id);
        out = cJSON_PrintUnformatted(msg);
        if (out != NULL)
            ls->out->send(ls->out, out, strlen(out), false);
    }
    pthread_mutex_unlock(&ls->lock);
out:
    free(out);
    cJSON_Delete(msg);
}

/* {"jsonrpc":"2.0","id":..,"result":{"_meta":{subscriptionId},
 * "resultType":"complete"}} */
static char *complete_json(const cJSON *id)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(res, "_meta");

    cJSON_AddItemToObject(meta, REV_META_SUBSCRIPTION, cJSON_Duplicate(id, 1));
    cJSON_AddStringToObject(res, "resultType", "complete");
    return jsonrpc_result(id, res);
}

/* End the stream: with its result (complete), or without an answer. */
static void ls_end(struct listen_sink *ls, bool complete)
{
    struct mcp_sink *out = NULL;
    char *json = NULL;

    pthread_mutex_lock(&ls->lock);
    out = ls->out;
    ls->out = NULL;
    if (out != NULL && complete) {
        json = complete_json(ls->id);
        out->send(out, json, json != NULL ? strlen(json) : 0, true);
    } else if (out != NULL) {
        out->send(out, NULL, 0, true);
    }
    pthread_mutex_unlock(&ls->lock);
    free(json);
    if (out == NULL)
        return;
    mcp_listen_count_down(ls->d);
    out->release(out);
}

/* The session's listen, referenced, or NULL. */
static struct listen_sink *session_listen(struct mcp_session *s)
{
    struct listen_sink *ls = NULL;

    pthread_mutex_lock(&s->lock);
    ls = s->listen;
    if (ls != NULL)
        atomic_fetch_add(&ls->refs, 1);
    pthread_mutex_unlock(&s->lock);
    return ls;
}

bool listen_cancel(struct mcp_session *s, const char *id_key)
{
    struct listen_sink *ls = session_listen(s);
    bool match = false;

    if (ls == NULL)
        return false;
    match = strcmp(ls->id_key, id_key) == 0;
    if (match) {
        log_msg(RLMCP_LOG_DEBUG, NULL,
                "subscriptions/listen %.64s cancelled by the client", id_key);
        ls_end(ls, false);
    }
    ls_unref(ls);
    return match;
}

void listen_session_end(struct mcp_session *s)
{
    struct listen_sink *ls = session_listen(s);

    if (ls == NULL)
        return;
    ls_end(ls, false);
    ls_unref(ls);
}

unsigned listen_end_all(struct mcp_dispatcher *d)
{
    struct mcp_session **v = mcp_listen_close(d);
    unsigned n = 0;
    size_t i;

    for (i = 0; v != NULL && v[i] != NULL; i++) {
        struct listen_sink *ls = session_listen(v[i]);

        if (ls != NULL) {
            ls_end(ls, true);
            ls_unref(ls);
            n++;
        }
        mcp_session_unref(v[i]);
    }
    free(v);
    return n;
}

/* ---- the request -------------------------------------------------------- */

static void fail(struct mcp_sink *sink, const cJSON *id, int code,
                 const char *msg)
{
    mcp_send_final(sink, jsonrpc_error(id, code, msg, NULL));
}

/*
 * params.notifications checked: the list flags asked for in *lists, and
 * the URIs (borrowed) in *uris. False after answering the error.
 */
static bool parse_filter(struct mcp_sink *sink, const cJSON *id,
                         const cJSON *params, unsigned *lists,
                         const cJSON **uris)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(params, "notifications");
    const cJSON *u = NULL;
    const cJSON *e = NULL;
    char msg[256];
    size_t i;

    if (!cJSON_IsObject(f)) {
        fail(sink, id, JSONRPC_INVALID_PARAMS,
             "params.notifications must be an object naming what to listen "
             "to, e.g. {\"toolsListChanged\": true, "
             "\"resourceSubscriptions\": [\"<uri>\"]}");
        return false;
    }
    *lists = 0;
    for (i = 0; i < N_LISTS; i++) {
        e = cJSON_GetObjectItemCaseSensitive(f, list_flags[i]);
        if (e != NULL && !cJSON_IsBool(e)) {
            snprintf(msg, sizeof(msg),
                     "params.notifications.%s must be true or false",
                     list_flags[i]);
            fail(sink, id, JSONRPC_INVALID_PARAMS, msg);
            return false;
        }
        if (cJSON_IsTrue(e))
            *lists |= 1u << i;
    }
    u = cJSON_GetObjectItemCaseSensitive(f, "resourceSubscriptions");
    *uris = NULL;
    if (u == NULL)
        return true;
    if (!cJSON_IsArray(u) ||
        (size_t)cJSON_GetArraySize(u) > RES_WATCH_MAX_PER_SESSION) {
        snprintf(msg, sizeof(msg),
                 "params.notifications.resourceSubscriptions must be an "
                 "array of at most %u resource URIs",
                 RES_WATCH_MAX_PER_SESSION);
        fail(sink, id, JSONRPC_INVALID_PARAMS, msg);
        return false;
    }
    cJSON_ArrayForEach(e, u)
    {
        if (!cJSON_IsString(e) || e->valuestring[0] == '\0') {
            fail(sink, id, JSONRPC_INVALID_PARAMS,
                 "params.notifications.resourceSubscriptions must hold "
                 "resource URIs (strings); see resources/list");
            return false;
        }
    }
    *uris = u;
    return true;
}

/*
 * Watch the URIs that name a resource of dep; the honoured ones go into
 * the array honoured. Unknown URIs are left out of the acknowledgement.
 */
static void watch_uris(struct mcp_dispatcher *d, struct mcp_session *s,
                       struct deployment *dep, const cJSON *uris,
                       const char *api_key, cJSON *honoured)
{
    const cJSON *e = NULL;

    cJSON_ArrayForEach(e, uris)
    {
        const struct resource_entry *r =
            resources_find(dep->reg, e->valuestring);

        if (r == NULL)
            continue;
        if ((r->flags & RLMCP_RESOURCE_SUBSCRIBABLE) && d->watch != NULL &&
            resources_watch_add(d->watch, s, e->valuestring, api_key) != 0)
            continue;
        cJSON_AddItemToArray(honoured, cJSON_CreateString(e->valuestring));
    }
}

static char *ack_json(const struct listen_sink *ls, cJSON *honoured_uris)
{
    size_t i;
    cJSON *msg = cJSON_CreateObject();
    cJSON *params = NULL;
    cJSON *n = NULL;
    cJSON *meta = NULL;
    char *json = NULL;

    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddStringToObject(msg, "method",
                            "notifications/subscriptions/acknowledged");
    params = cJSON_AddObjectToObject(msg, "params");
    n = cJSON_AddObjectToObject(params, "notifications");
    for (i = 0; i < N_LISTS; i++) {
        if (ls->lists & (1u << i))
            cJSON_AddTrueToObject(n, list_flags[i]);
    }
    if (honoured_uris != NULL)
        cJSON_AddItemReferenceToObject(n, "resourceSubscriptions",
                                       honoured_uris);
    meta = cJSON_AddObjectToObject(params, "_meta");
    cJSON_AddItemToObject(meta, REV_META_SUBSCRIPTION,
                          cJSON_Duplicate(ls->id, 1));
    json = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    return json;
}

static struct listen_sink *ls_new(struct mcp_dispatcher *d, const cJSON *id,
                                  unsigned lists, bool resources)
{
    struct listen_sink *ls = calloc(1, sizeof(*ls));

    if (ls == NULL)
        return NULL;
    ls->sink.send = ls_send;
    ls->sink.retain = ls_retain;
    ls->sink.release = ls_release;
    atomic_init(&ls->refs, 1);
    pthread_mutex_init(&ls->lock, NULL);
    ls->d = d;
    ls->lists = lists;
    ls->resources = resources;
    ls->id = cJSON_Duplicate(id, 1);
    ls->id_key = jsonrpc_id_key(id);
    if (ls->id == NULL || ls->id_key == NULL) {
        ls_unref(ls);
        return NULL;
    }
    return ls;
}

void listen_open(struct mcp_dispatcher *d, struct mcp_session *s,
                 struct deployment *dep, struct mcp_sink *sink, const cJSON *id,
                 const cJSON *params, const char *api_key)
{
    const cJSON *uris = NULL;
    struct listen_sink *ls = NULL;
    cJSON *honoured = NULL;
    char *ack = NULL;
    char msg[256];
    unsigned lists = 0;
    int rc = 0;

    if (!parse_filter(sink, id, params, &lists, &uris))
        return;
    ls = ls_new(d, id, lists, uris != NULL);
    if (ls == NULL) {
        fail(sink, id, JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    /* Held until the stream ends (ls_end), which may come from any thread
     * as soon as it is registered: the acknowledgement goes first. */
    sink->retain(sink);
    ls->out = sink;
    pthread_mutex_lock(&ls->lock);
    rc = mcp_listen_register(s, ls, &ls->sink);
    if (rc != 0) {
        ls->out = NULL;
        pthread_mutex_unlock(&ls->lock);
        if (rc == -2)
            snprintf(msg, sizeof(msg),
                     "too many subscriptions/listen streams open on this "
                     "server (limit %u); close one and retry",
                     LISTEN_MAX_STREAMS);
        else
            snprintf(msg, sizeof(msg), "%s",
                     rc == -3 ? "this request already opened a listen "
                                "stream"
                              : "the server is shutting down; no new listen "
                                "streams are taken");
        fail(sink, id, JSONRPC_SERVER_BUSY, msg);
        sink->release(sink);
        ls_unref(ls);
        return;
    }
    if (uris != NULL) {
        honoured = cJSON_CreateArray();
        watch_uris(d, s, dep, uris, api_key, honoured);
    }
    ack = ack_json(ls, honoured);
    if (ack != NULL)
        sink->send(sink, ack, strlen(ack), false);
    pthread_mutex_unlock(&ls->lock);
    free(ack);
    cJSON_Delete(honoured);
    ls_unref(ls); /* the session holds it now */
}
