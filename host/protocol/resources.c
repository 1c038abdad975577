/*
 * resources.c - URI templates, the resource a URI names, and the watcher
 * behind resources/subscribe.
 *
 * The watcher re-reads each subscribed RLMCP_RESOURCE_SUBSCRIBABLE
 * resource through its own read handler (a call on the worker pool, with
 * the subscriber's key) every RES_WATCH_INTERVAL_MS after the previous
 * read ended, and sends notifications/resources/updated to the session
 * when the answer (contents and _meta, or the error) differs from the one
 * before. The first read only sets the baseline. Locks: w->lock is never
 * held while a sink sends.
 */
#define _GNU_SOURCE
#include "resources.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadline.h"
#include "jsonrpc.h"
#include "loader.h"
#include "log.h"
#include "call_state.h"
#include "dispatch.h"
#include "mcp_internal.h"
#include "pool.h"
#include "registry.h"
#include "secret.h"

/* A watched read may take this long (an execution's live window is 0.8 s). */
#define RES_WATCH_READ_MS 30000u
/* How long resources_watch_free waits for reads in flight. */
#define RES_WATCH_DRAIN_MS 5000u

bool resources_template_match(const char *tpl, const char *uri)
{
    while (*tpl != '\0') {
        if (*tpl == '{') {
            const char *close = strchr(tpl, '}');
            bool reserved = tpl[1] == '+';
            const char *u = uri;

            if (close == NULL)
                return false;
            tpl = close + 1;
            /* Shortest match first, so literal text after it can match. */
            while (*u != '\0' && (reserved || *u != '/')) {
                u++;
                if (resources_template_match(tpl, u))
                    return true;
            }
            return false;
        }
        if (*tpl != *uri)
            return false;
        tpl++;
        uri++;
    }
    return *uri == '\0';
}

/* Characters of a template outside its {expressions}. */
static size_t literal_len(const char *tpl)
{
    size_t n = 0;
    bool in_expr = false;

    for (; *tpl != '\0'; tpl++) {
        if (*tpl == '{')
            in_expr = true;
        else if (*tpl == '}')
            in_expr = false;
        else if (!in_expr)
            n++;
    }
    return n;
}

const struct resource_entry *resources_find(const struct registry *reg,
                                            const char *uri)
{
    const struct resource_entry *best = NULL;
    size_t best_len = 0;
    size_t n = registry_resource_count(reg);
    size_t i;

    for (i = 0; i < n; i++) {
        const struct resource_entry *e = registry_resource_at(reg, i);

        if (e->uri != NULL && strcmp(e->uri, uri) == 0)
            return e;
    }
    for (i = 0; i < n; i++) {
        const struct resource_entry *e = registry_resource_at(reg, i);
        size_t len = 0;

        if (e->uri_template == NULL ||
            !resources_template_match(e->uri_template, uri))
            continue;
        len = literal_len(e->uri_template);
        if (best == NULL || len > best_len) {
            best = e;
            best_len = len;
        }
    }
    return best;
}

/* ---- subscriptions ------------------------------------------------------ */

struct watch_sub {
    struct mcp_sink sink; /* first: a read's answers come here */
    atomic_int refs;      /* the list's, and each read's (sink retain) */
    struct res_watch *w;
    struct mcp_session *s; /* referenced */
    char *uri;
    char *api_key; /* never logged */
    uint64_t fingerprint;
    bool have_fingerprint;
    bool removed;
    uint64_t due_ns;
    struct rlmcp_call *reading; /* referenced while a read runs */
    struct watch_sub *next;
};

struct res_watch {
    struct mcp_dispatcher *d;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* wakes the thread; also "a read ended" */
    pthread_t thread;
    bool running;
    bool stopping;
    struct watch_sub *subs;
    unsigned n_reading;
};

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void sub_unref(struct watch_sub *sub)
{
    if (atomic_fetch_sub(&sub->refs, 1) != 1)
        return;
    mcp_session_unref(sub->s);
    free(sub->uri);
    secret_free(sub->api_key);
    free(sub);
}

static void sub_retain(struct mcp_sink *sink)
{
    atomic_fetch_add(&((struct watch_sub *)sink)->refs, 1);
}

static void sub_release(struct mcp_sink *sink)
{
    sub_unref((struct watch_sub *)sink);
}

static void notify_updated(struct watch_sub *sub)
{
    struct mcp_session *s = sub->s;
    struct mcp_sink *out = NULL;
    cJSON *msg = cJSON_CreateObject();
    cJSON *params = NULL;
    char *json = NULL;

    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddStringToObject(msg, "method", "notifications/resources/updated");
    params = cJSON_AddObjectToObject(msg, "params");
    cJSON_AddStringToObject(params, "uri", sub->uri);
    json = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    pthread_mutex_lock(&s->lock);
    out = s->closed ? NULL : s->notify;
    if (out != NULL)
        out->retain(out);
    pthread_mutex_unlock(&s->lock);
    if (out != NULL && json != NULL)
        out->send(out, json, strlen(json), false);
    if (out != NULL)
        out->release(out);
    free(json);
}

/* A read's final answer (json NULL: it was cancelled). */
static void sub_send(struct mcp_sink *sink, const char *json, size_t len,
                     bool final)
{
    struct watch_sub *sub = (struct watch_sub *)sink;
    struct res_watch *w = sub->w;
    struct rlmcp_call *c = NULL;
    bool changed = false;
    uint64_t fp = 0;

    if (!final)
        return;
    if (json != NULL)
        fp = fnv1a(json, len);
    pthread_mutex_lock(&w->lock);
    c = sub->reading;
    sub->reading = NULL;
    if (json != NULL && !sub->removed && !w->stopping) {
        changed = sub->have_fingerprint && fp != sub->fingerprint;
        sub->fingerprint = fp;
        sub->have_fingerprint = true;
    }
    sub->due_ns =
        deadline_now_ns() + (uint64_t)RES_WATCH_INTERVAL_MS * 1000000ull;
    w->n_reading--;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (changed)
        notify_updated(sub);
    /* The job still holds the call: this is never its last reference. */
    if (c != NULL)
        call_unref(c);
}

/*
 * The resource behind sub in the current deployment, and that deployment
 * (referenced): each read looks it up again, so a reload that changed or
 * removed its plugin is followed. NULL when it is no longer watchable.
 */
static const struct resource_entry *sub_resource(struct res_watch *w,
                                                 const struct watch_sub *sub,
                                                 struct deployment **dep)
{
    const struct resource_entry *e = NULL;

    *dep = mcp_deployment_get(w->d);
    e = resources_find((*dep)->reg, sub->uri);
    if (e != NULL && (e->flags & RLMCP_RESOURCE_SUBSCRIBABLE))
        return e;
    deployment_unref(*dep);
    *dep = NULL;
    return NULL;
}

/* Start one read of sub on the pool (w->lock held). */
static void start_read(struct res_watch *w, struct watch_sub *sub)
{
    static const cJSON id = {.type = cJSON_Number, .valueint = 0};
    struct deployment *dep = NULL;
    const struct resource_entry *e = sub_resource(w, sub, &dep);
    struct rlmcp_call *c = NULL;
    uint64_t now = deadline_now_ns();

    if (e != NULL)
        c = call_new(w->d, dep, sub->s, &sub->sink, CALL_RESOURCE, &id,
                     sub->api_key);
    deployment_unref(dep); /* the call holds its own reference */
    if (c != NULL)
        c->uri = strdup(sub->uri);
    if (c == NULL || c->uri == NULL) {
        call_unref(c);
        sub->due_ns = now + (uint64_t)RES_WATCH_INTERVAL_MS * 1000000ull;
        return;
    }
    c->resource = e;
    c->what = c->uri;
    c->plugin = e->plugin;
    c->plugin_name = e->plugin != NULL ? e->plugin->name : NULL;
    c->timeout_ms = RES_WATCH_READ_MS;
    c->deadline_ns = now + (uint64_t)RES_WATCH_READ_MS * 1000000ull;
    call_ref(c);
    sub->reading = c;
    w->n_reading++;
    if (pool_submit(w->d->pool, call_job, c) == 0)
        return;
    sub->reading = NULL;
    w->n_reading--;
    call_unref(c);
    call_unref(c);
    sub->due_ns = now + (uint64_t)RES_WATCH_INTERVAL_MS * 1000000ull;
}

static void *watch_main(void *arg)
{
    struct res_watch *w = arg;

    pthread_mutex_lock(&w->lock);
    while (!w->stopping) {
        uint64_t now = deadline_now_ns();
        uint64_t next = 0;
        struct watch_sub *sub = NULL;

        for (sub = w->subs; sub != NULL; sub = sub->next) {
            if (sub->reading != NULL)
                continue;
            if (sub->due_ns <= now)
                start_read(w, sub);
            if (sub->reading == NULL && (next == 0 || sub->due_ns < next))
                next = sub->due_ns;
        }
        if (next == 0) {
            pthread_cond_wait(&w->cond, &w->lock);
            continue;
        }
        deadline_cond_wait(&w->cond, &w->lock, next);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct res_watch *resources_watch_new(struct mcp_dispatcher *d)
{
    struct res_watch *w = calloc(1, sizeof(*w));
    pthread_condattr_t attr;

    if (w == NULL)
        return NULL;
    w->d = d;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    return w;
}

static unsigned session_watches(const struct res_watch *w,
                                const struct mcp_session *s, const char *uri,
                                bool *present)
{
    const struct watch_sub *sub = NULL;
    unsigned n = 0;

    *present = false;
    for (sub = w->subs; sub != NULL; sub = sub->next) {
        if (sub->s != s)
            continue;
        n++;
        if (strcmp(sub->uri, uri) == 0)
            *present = true;
    }
    return n;
}

static struct watch_sub *sub_new(struct res_watch *w, struct mcp_session *s,
                                 const char *uri, const char *api_key)
{
    struct watch_sub *sub = calloc(1, sizeof(*sub));

    if (sub == NULL)
        return NULL;
    sub->sink.send = sub_send;
    sub->sink.retain = sub_retain;
    sub->sink.release = sub_release;
    atomic_init(&sub->refs, 1);
    sub->w = w;
    sub->uri = strdup(uri);
    sub->api_key = api_key != NULL ? strdup(api_key) : NULL;
    if (sub->uri == NULL || (api_key != NULL && sub->api_key == NULL)) {
        free(sub->uri);
        free(sub->api_key);
        free(sub);
        return NULL;
    }
    mcp_session_ref(s);
    sub->s = s;
    return sub;
}

int resources_watch_add(struct res_watch *w, struct mcp_session *s,
                        const char *uri, const char *api_key)
{
    struct watch_sub *sub = NULL;
    bool present = false;
    unsigned n;
    int rc = 0;

    pthread_mutex_lock(&w->lock);
    n = session_watches(w, s, uri, &present);
    if (present || w->stopping)
        goto out;
    if (n >= RES_WATCH_MAX_PER_SESSION) {
        rc = -1;
        goto out;
    }
    sub = sub_new(w, s, uri, api_key);
    if (sub == NULL) {
        rc = -1;
        goto out;
    }
    if (!w->running) {
        if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
            sub_unref(sub);
            rc = -1;
            goto out;
        }
        w->running = true;
    }
    sub->next = w->subs;
    w->subs = sub;
    pthread_cond_broadcast(&w->cond);
out:
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* Unlink the subs matching (s, uri; uri NULL: all of s). Caller unrefs. */
static struct watch_sub *take_subs(struct res_watch *w,
                                   const struct mcp_session *s, const char *uri)
{
    struct watch_sub **pp = &w->subs;
    struct watch_sub *taken = NULL;

    while (*pp != NULL) {
        struct watch_sub *sub = *pp;

        if ((s == NULL || sub->s == s) &&
            (uri == NULL || strcmp(sub->uri, uri) == 0)) {
            *pp = sub->next;
            sub->removed = true;
            sub->next = taken;
            taken = sub;
        } else {
            pp = &sub->next;
        }
    }
    return taken;
}

static void drop_subs(struct res_watch *w, const struct mcp_session *s,
                      const char *uri)
{
    struct watch_sub *taken = NULL;

    pthread_mutex_lock(&w->lock);
    taken = take_subs(w, s, uri);
    pthread_mutex_unlock(&w->lock);
    while (taken != NULL) {
        struct watch_sub *next = taken->next;

        sub_unref(taken); /* a read in flight keeps it until it ends */
        taken = next;
    }
}

void resources_watch_remove(struct res_watch *w, struct mcp_session *s,
                            const char *uri)
{
    if (w != NULL)
        drop_subs(w, s, uri);
}

void resources_watch_session(struct res_watch *w, struct mcp_session *s)
{
    if (w != NULL)
        drop_subs(w, s, NULL);
}

/* Cancel the reads in flight (referenced copies, w->lock not held). */
static void cancel_reads(struct res_watch *w)
{
    struct rlmcp_call *calls[64];
    struct watch_sub *sub = NULL;
    size_t n = 0;
    size_t i;

    pthread_mutex_lock(&w->lock);
    for (sub = w->subs; sub != NULL && n < 64; sub = sub->next) {
        if (sub->reading != NULL) {
            call_ref(sub->reading);
            calls[n++] = sub->reading;
        }
    }
    pthread_mutex_unlock(&w->lock);
    for (i = 0; i < n; i++) {
        call_cancel(calls[i], CANCEL_SHUTDOWN);
        call_unref(calls[i]);
    }
}

void resources_watch_free(struct res_watch *w)
{
    uint64_t until = 0;

    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (w->running)
        pthread_join(w->thread, NULL);
    cancel_reads(w);
    until = deadline_now_ns() + (uint64_t)RES_WATCH_DRAIN_MS * 1000000ull;
    pthread_mutex_lock(&w->lock);
    while (w->n_reading > 0) {
        if (deadline_cond_wait(&w->cond, &w->lock, until) == ETIMEDOUT)
            break;
    }
    if (w->n_reading > 0) {
        /* A read ignores cancellation: it would still use w. */
        pthread_mutex_unlock(&w->lock);
        log_msg(RLMCP_LOG_ERROR, NULL,
                "resource reads still running at shutdown; leaving them to "
                "the process exit");
        return;
    }
    pthread_mutex_unlock(&w->lock);
    drop_subs(w, NULL, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
}
