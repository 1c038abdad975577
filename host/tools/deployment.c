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
    atomic_init(&dep->retired, false);
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

void deployment_unref(struct deployment *dep)
{
    int was = 0;

    if (dep == NULL)
        return;
    was = atomic_fetch_sub(&dep->refs, 1);
    if (was == 1)
        deployment_free(dep);
    else if (was == 2 && atomic_load(&dep->retired) && dep->on_idle != NULL)
        dep->on_idle(dep->idle_arg);
}

void deployment_retire(struct deployment *dep, void (*on_idle)(void *arg),
                       void *arg)
{
    dep->on_idle = on_idle;
    dep->idle_arg = arg;
    atomic_store(&dep->retired, true);
}

bool deployment_idle(const struct deployment *dep)
{
    return atomic_load(&dep->refs) == 1;
}
