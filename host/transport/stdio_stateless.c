/*
 * stdio_stateless.c - 2026-07-28 requests over stdio (stdio_stateless.h).
 */
#include "stdio_stateless.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dlist.h"
#include "intake.h"
#include "log.h"
#include "mcp.h"

struct sl_req;

struct stdio_stateless {
    struct mcp_dispatcher *d;
    atomic_int refs; /* the reader's and one per live request */
    pthread_mutex_t lock;
    struct sl_req *live; /* requests whose session still exists */
};

/* One request: its own session and a sink adapting its final answer. */
struct sl_req {
    struct mcp_sink sink; /* first: the sink pointer is the struct's */
    atomic_int refs;
    struct stdio_stateless *owner;
    struct mcp_sink *out;
    struct mcp_session *ms;
    struct intake_reply reply;  /* how its final answer goes out */
    struct sl_req *next, *prev; /* owner->live, under owner->lock */
};

struct stdio_stateless *stdio_stateless_new(struct mcp_dispatcher *d)
{
    struct stdio_stateless *st = calloc(1, sizeof(*st));

    if (st == NULL)
        return NULL;
    st->d = d;
    atomic_init(&st->refs, 1);
    pthread_mutex_init(&st->lock, NULL);
    return st;
}

static void owner_unref(struct stdio_stateless *st)
{
    if (st == NULL || atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&st->lock);
    free(st);
}

void stdio_stateless_free(struct stdio_stateless *st)
{
    owner_unref(st);
}

static void sl_send(struct mcp_sink *sink, const char *json, size_t len,
                    bool final)
{
    struct sl_req *q = (struct sl_req *)sink;
    char *adapted = NULL;

    if (final)
        adapted = intake_answer(&q->reply, json, len);
    if (adapted != NULL)
        q->out->send(q->out, adapted, strlen(adapted), final);
    else
        q->out->send(q->out, json, len, final);
    free(adapted);
}

static void sl_retain(struct mcp_sink *sink)
{
    struct sl_req *q = (struct sl_req *)sink;

    atomic_fetch_add(&q->refs, 1);
}

static void sl_release(struct mcp_sink *sink)
{
    struct sl_req *q = (struct sl_req *)sink;
    struct stdio_stateless *st = q->owner;

    if (atomic_fetch_sub(&q->refs, 1) != 1)
        return;
    pthread_mutex_lock(&st->lock);
    DLIST_UNLINK(st->live, q, prev, next);
    pthread_mutex_unlock(&st->lock);
    mcp_session_free(q->ms);
    if (q->out->release != NULL)
        q->out->release(q->out);
    free(q);
    owner_unref(st);
}

bool stdio_stateless_handle(struct stdio_stateless *st, const char *line,
                            size_t len, struct mcp_sink *out,
                            bool session_initialized)
{
    struct mcp_request_ctx ctx = {.api_key = NULL};
    struct sl_req *q = NULL;
    struct intake_reply reply;
    enum intake_session where =
        session_initialized ? INTAKE_SESSION_OPEN : INTAKE_NO_SESSION;
    char *err = NULL;

    if (st == NULL || !intake_line_stateless(line, len, where, &reply))
        return false;
    intake_mark_stateless(&ctx);
    q = calloc(1, sizeof(*q));
    if (q != NULL)
        q->ms = mcp_session_new(st->d);
    if (q == NULL || q->ms == NULL) {
        free(q);
        err = intake_refusal(INTAKE_REFUSE_INTERNAL, NULL, "out of memory");
        if (err != NULL)
            out->send(out, err, strlen(err), true);
        free(err);
        return true;
    }
    q->sink.send = sl_send;
    q->sink.retain = sl_retain;
    q->sink.release = sl_release;
    atomic_init(&q->refs, 1); /* ours, until mcp_handle returned */
    q->reply = reply;
    q->out = out;
    if (out->retain != NULL)
        out->retain(out);
    q->owner = st;
    atomic_fetch_add(&st->refs, 1);
    pthread_mutex_lock(&st->lock);
    DLIST_PUSH(st->live, q, prev, next);
    pthread_mutex_unlock(&st->lock);
    mcp_handle(st->d, q->ms, line, len, &q->sink, &ctx);
    sl_release(&q->sink);
    return true;
}

void stdio_stateless_notify(struct stdio_stateless *st, const char *line,
                            size_t len)
{
    struct mcp_request_ctx ctx = {.api_key = NULL};
    struct sl_req **held = NULL;
    struct sl_req *q = NULL;
    size_t n = 0, i = 0;

    if (st == NULL || !intake_line_cancel(line, len))
        return;
    intake_mark_stateless(&ctx);
    /* Hold each live request so none goes while it is handed the line. */
    pthread_mutex_lock(&st->lock);
    for (q = st->live; q != NULL; q = q->next)
        n++;
    held = n > 0 ? calloc(n, sizeof(*held)) : NULL;
    for (q = st->live, i = 0; held != NULL && q != NULL; q = q->next, i++) {
        atomic_fetch_add(&q->refs, 1);
        held[i] = q;
    }
    pthread_mutex_unlock(&st->lock);
    for (i = 0; held != NULL && i < n; i++) {
        mcp_handle(st->d, held[i]->ms, line, len, &held[i]->sink, &ctx);
        sl_release(&held[i]->sink);
    }
    free(held);
}
