/*
 * loader.h - loads the deployment's plugins, in order, and unloads them.
 *
 * For each enabled plugins: entry: dlopen(RTLD_NOW|RTLD_LOCAL), find
 * rlmcp_plugin_descriptor(), check the ABI version and the descriptor's
 * size and name before any other plugin code runs, then call init() with
 * the services table. Failures log one line (path, versions, what to do)
 * and fail the startup or, with host.on_plugin_error: skip, drop the
 * plugin. A failed init is fully undone: everything it registered is
 * unregistered, user_data_free is called, the object is dlclosed.
 */
#ifndef RLMCP_HOST_LOADER_H
#define RLMCP_HOST_LOADER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "rlmcp/plugin.h"

struct registry;
struct loaded_plugin;

/* The handle plugins see (rlmcp_plugin *): a pointer back to its owner. */
struct rlmcp_plugin {
    struct loaded_plugin *lp;
};

/*
 * One loaded plugin instance. A reload keeps the instance of a plugin whose
 * path and config did not change: every deployment (struct loader) that
 * lists it holds a reference, and it is shut down and unloaded with the
 * last one.
 */
struct loaded_plugin {
    struct rlmcp_plugin handle; /* &lp->handle is what plugins get */
    atomic_int refs;            /* loaders listing it */
    char *name;
    char *path;
    void *dl;                      /* dlopen handle */
    struct rlmcp_plugin_desc desc; /* copy of the descriptor (our size) */
    char *config_json;             /* its config: section as JSON, "{}" */
    size_t config_len;
    void *state;          /* from init */
    bool in_init;         /* register_* / set_error allowed */
    bool initialized;     /* init returned RLMCP_OK */
    bool dying;           /* its last reference is being dropped */
    char *init_error;     /* set_error text */
    struct registry *reg; /* the registry being built, during init only */
    /* The services its init() got. */
    const struct rlmcp_host_api *api;
    /* What it registered, as registered (never selected): copied into
     * each deployment's registry; owns the user data. */
    struct registry *origin;
};

struct loader {
    struct loaded_plugin **plugins; /* deployment order */
    size_t n_plugins;
    size_t n_skipped; /* dropped under on_plugin_error: skip */
    size_t n_kept;    /* taken over from the previous deployment */
    struct registry *reg;
    const char *file; /* the deployment file, for messages during a load */
    const struct rlmcp_host_api *api; /* handed to each plugin's init() */
};

/* The descriptor size of ABI 1.0: the loader accepts nothing smaller. */
#define LOADER_DESC_SIZE_1_0                                                   \
    (offsetof(struct rlmcp_plugin_desc, shutdown) + sizeof(rlmcp_shutdown_fn))

/*
 * The plugin directory: cfg's plugin_dir (a relative one is taken relative
 * to the deployment file's directory), else $RLMCP_PLUGIN_DIR, else
 * <bindir>/../plugins (build tree) or <bindir>/../lib/runloop-mcp/plugins
 * (a relocated install) when it exists, else RLMCP_INSTALL_PLUGIN_DIR.
 * Returns a malloc'd string.
 */
char *loader_plugin_dir(const struct host_config *cfg);

/*
 * Load every enabled plugin of cfg into reg (which must be open, not yet
 * selected), handing api (the host services, services_table()) to each
 * init(). Returns 0 and *out, or -1 (every reason already logged) with
 * everything loaded so far undone.
 */
int loader_load_all(const struct host_config *cfg, struct registry *reg,
                    const struct rlmcp_host_api *api, struct loader **out);

/*
 * A reload: like loader_load_all, but a plugin of old whose resolved path
 * and config are the same is kept (referenced, its registrations copied
 * into reg; init is not called again). old may be NULL. On -1, nothing
 * of old changed.
 */
int loader_reload(const struct host_config *cfg, struct registry *reg,
                  const struct rlmcp_host_api *api, const struct loader *old,
                  struct loader **out);

/*
 * Drop the loader's reference to each plugin. Those left without one
 * (all of them without reloads) go in reverse order: each plugin's
 * shutdown() (last loaded first), then every user_data_free, then
 * dlclose. Call it after the calls of the deployment have ended. NULL is
 * fine.
 */
void loader_unload_all(struct loader *l);

/* Handle <-> plugin. */
static inline rlmcp_plugin *loader_handle(struct loaded_plugin *lp)
{
    return lp ? &lp->handle : NULL;
}
static inline struct loaded_plugin *loader_from_handle(rlmcp_plugin *h)
{
    return h ? h->lp : NULL;
}

#endif
