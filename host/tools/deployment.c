/*
 * deployment.c - the refcounted deployment snapshot (see deployment.h).
 */
#include "deployment.h"

#include <stdlib.h>

#include "loader.h"
#include "registry.h"

struct deployment *deployment_new(struct registry *reg, struct loader *ldr,
                                  unsigned call_timeout_ms)
{
    struct deployment *dep = calloc(1, sizeof(*dep));

    if (dep == NULL)
        return NULL;
    atomic_init(&dep->refs, 1);
    dep->reg = reg;
    dep->ldr = ldr;
    dep->call_timeout_ms = call_timeout_ms;
    return dep;
}

void deployment_ref(struct deployment *dep)
{
    atomic_fetch_add(&dep->refs, 1);
}

static void deployment_free(struct deployment *dep)
{
    size_t i = 0;

    for (i = 0; i < dep->n_tool_pages; i++)
        free(dep->tool_pages[i]);
    free(dep->tool_pages);
    if (dep->ldr != NULL) {
        /* Plugins first: their shutdown may still read their entries. */
        loader_unload_all(dep->ldr);
        registry_free(dep->reg);
    }
    free(dep);
}

/* Set once in refs beside the count: a release reads both in one atomic
 * step, so it cannot miss a retire that comes between its reads. */
#define DEP_RETIRED (1 << 30)

void deployment_unref(struct deployment *dep)
{
    void (*on_idle)(void *arg) = NULL;
    void *arg = NULL;
    int cur = 0;

    if (dep == NULL)
        return;
    cur = atomic_load(&dep->refs);
    do {
        /* Read while this reference still holds dep: once it is gone,
         * the retirer may free dep at once. */
        on_idle = NULL;
        if ((cur & DEP_RETIRED) != 0 && (cur & ~DEP_RETIRED) == 2) {
            on_idle = dep->on_idle;
            arg = dep->idle_arg;
        }
    } while (!atomic_compare_exchange_weak(&dep->refs, &cur, cur - 1));
    if ((cur & ~DEP_RETIRED) == 1)
        deployment_free(dep);
    else if (on_idle != NULL)
        on_idle(arg);
}

void deployment_retire(struct deployment *dep, void (*on_idle)(void *arg),
                       void *arg)
{
    dep->on_idle = on_idle;
    dep->idle_arg = arg;
    atomic_fetch_or(&dep->refs, DEP_RETIRED); /* publishes both */
}

void deployment_unretire(struct deployment *dep)
{
    atomic_fetch_and(&dep->refs, ~DEP_RETIRED);
}

bool deployment_idle(const struct deployment *dep)
{
    return (atomic_load(&dep->refs) & ~DEP_RETIRED) == 1;
}
