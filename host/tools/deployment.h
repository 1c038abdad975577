/*
 * deployment.h - one deployment as served: the selected registry, the
 * plugins behind it and what the dispatcher derives from them, never
 * changed once published.
 *
 * Refcounted. The dispatcher holds the current one; each request holds
 * the one it started on until it is answered, each call until it ends. A
 * reload (reload.h) publishes a new one and retires the old: the old one,
 * and the plugins only it holds, go when its last call has finished.
 */
#ifndef RLMCP_HOST_DEPLOYMENT_H
#define RLMCP_HOST_DEPLOYMENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct registry;
struct loader;

struct deployment {
    atomic_int refs;          /* and a retired mark (deployment.c) */
    struct registry *reg;     /* selected and frozen */
    struct loader *ldr;       /* NULL: reg is borrowed, not freed here */
    unsigned call_timeout_ms; /* host.call_timeout_ms; 0: the dispatcher's */

    /* Filled by the dispatcher before it publishes the deployment. */
    char **tool_pages; /* pre-joined tools/list pages */
    size_t n_tool_pages;
    bool has_tasks; /* a selected tool runs as a task (tasks.h) */

    /* Retired (replaced by a reload): on_idle(idle_arg) runs, on any
     * thread, whenever a release leaves one reference (the retirer's). */
    void (*on_idle)(void *arg);
    void *idle_arg;
};

/*
 * A deployment of reg (frozen) and the loader of its plugins; both owned,
 * freed with the last reference. ldr NULL: reg is only borrowed. NULL when
 * out of memory (nothing taken).
 */
struct deployment *deployment_new(struct registry *reg, struct loader *ldr,
                                  unsigned call_timeout_ms);

void deployment_ref(struct deployment *dep);
/* The last reference unloads the plugins only it held. NULL is fine. */
void deployment_unref(struct deployment *dep);

/* Mark dep replaced; on_idle(arg) then reports when it may be released. */
void deployment_retire(struct deployment *dep, void (*on_idle)(void *arg),
                       void *arg);

/* Retired no more: releases call no on_idle from now on (the retirer is
 * going away). */
void deployment_unretire(struct deployment *dep);

/* True when nobody but the caller holds dep. */
bool deployment_idle(const struct deployment *dep);

#endif
