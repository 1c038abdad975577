/*
 * loader.c - dlopen the deployment's plugins, check them, init, unload.
 */
#define _GNU_SOURCE /* asprintf, vasprintf */
#include "loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "exe_dir.h"
#include "log.h"
#include "registry.h"
#include "schema.h"

#ifndef RLMCP_INSTALL_PLUGIN_DIR
#define RLMCP_INSTALL_PLUGIN_DIR "/usr/local/lib/runloop-mcp/plugins"
#endif

/* dir of file (a deployment path), malloc'd; "." when it has none. */
static char *dir_of(const char *file)
{
    const char *slash = file ? strrchr(file, '/') : NULL;

    if (slash == NULL)
        return strdup(".");
    if (slash == file)
        return strdup("/");
    return strndup(file, (size_t)(slash - file));
}

char *loader_plugin_dir(const struct host_config *cfg)
{
    /* The build tree (build/bin -> build/plugins), then an installed tree
     * moved elsewhere (<prefix>/bin -> <prefix>/lib/runloop-mcp/plugins). */
    static const char *const rel[] = {"/../plugins",
                                      "/../lib/runloop-mcp/plugins",
                                      "/../lib64/runloop-mcp/plugins"};
    const char *env = getenv("RLMCP_PLUGIN_DIR");
    char *dir = NULL;
    char *out = NULL;

    if (cfg != NULL && cfg->host.plugin_dir != NULL) {
        if (cfg->host.plugin_dir[0] == '/')
            return strdup(cfg->host.plugin_dir);
        dir = dir_of(cfg->path);
        if (dir == NULL ||
            asprintf(&out, "%s/%s", dir, cfg->host.plugin_dir) < 0)
            out = NULL;
        free(dir);
        return out;
    }
    if (env != NULL && env[0] != '\0')
        return strdup(env);
    out = exe_dir_beside(rel, sizeof(rel) / sizeof(rel[0]));
    return out != NULL ? out : strdup(RLMCP_INSTALL_PLUGIN_DIR);
}

static char *plugin_path(const struct host_plugin_config *p, const char *dir)
{
    char *out = NULL;
    int rc = 0;

    if (p->path != NULL && p->path[0] == '/')
        return strdup(p->path);
    if (p->path != NULL)
        rc = asprintf(&out, "%s/%s", dir, p->path);
    else
        rc = asprintf(&out, "%s/rlmcp_%s.so", dir, p->name);
    return rc < 0 ? NULL : out;
}

static void plugin_free(struct loaded_plugin *lp)
{
    if (lp == NULL)
        return;
    free(lp->name);
    free(lp->path);
    free(lp->init_error);
    free(lp->config_json);
    registry_free(lp->origin);
    free(lp);
}

static bool valid_desc_name(const char *s)
{
    size_t n = 0;

    if (s == NULL)
        return false;
    for (n = 0; s[n] != '\0' && n <= 64; n++) {
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') ||
              s[n] == '_'))
            return false;
    }
    return n > 0 && n <= 64;
}

#define LOAD_FAIL(lp, ...) log_msg(RLMCP_LOG_ERROR, (lp)->name, __VA_ARGS__)

/* Version and size checks on the descriptor: no plugin code runs. */
static int check_desc(struct loaded_plugin *lp,
                      const struct rlmcp_plugin_desc *d)
{
    const unsigned char *bytes = (const unsigned char *)d;
    size_t i = 0;

    if (d->abi_major != RLMCP_ABI_MAJOR) {
        LOAD_FAIL(
            lp,
            "%s: plugin ABI %u.%u, host ABI %d.%d: the major versions differ; "
            "rebuild the plugin against this host's SDK (rlmcp/plugin.h %d.x)",
            lp->path, d->abi_major, d->abi_minor, RLMCP_ABI_MAJOR,
            RLMCP_ABI_MINOR, RLMCP_ABI_MAJOR);
        return -1;
    }
    if (d->abi_minor > RLMCP_ABI_MINOR) {
        LOAD_FAIL(lp,
                  "%s: plugin ABI %u.%u, host ABI %d.%d: the plugin needs a "
                  "newer host; upgrade runloop-mcp or rebuild the plugin with "
                  "-DRLMCP_TARGET_ABI_MINOR=%d",
                  lp->path, d->abi_major, d->abi_minor, RLMCP_ABI_MAJOR,
                  RLMCP_ABI_MINOR, RLMCP_ABI_MINOR);
        return -1;
    }
    if (d->struct_size < LOADER_DESC_SIZE_1_0) {
        LOAD_FAIL(lp,
                  "%s: plugin ABI %u.%u, host ABI %d.%d: descriptor "
                  "struct_size %zu is smaller than ABI 1.0's %zu; define the "
                  "descriptor with RLMCP_PLUGIN_DEFINE",
                  lp->path, d->abi_major, d->abi_minor, RLMCP_ABI_MAJOR,
                  RLMCP_ABI_MINOR, d->struct_size, LOADER_DESC_SIZE_1_0);
        return -1;
    }
    for (i = sizeof(*d); i < d->struct_size; i++) {
        if (bytes[i] != 0) {
            LOAD_FAIL(lp,
                      "%s: plugin ABI %u.%u, host ABI %d.%d: the descriptor "
                      "sets fields this host does not know (struct_size %zu > "
                      "%zu, non-zero at byte %zu); upgrade runloop-mcp",
                      lp->path, d->abi_major, d->abi_minor, RLMCP_ABI_MAJOR,
                      RLMCP_ABI_MINOR, d->struct_size, sizeof(*d), i);
            return -1;
        }
    }
    memcpy(&lp->desc, d,
           d->struct_size < sizeof(*d) ? d->struct_size : sizeof(*d));
    if (lp->desc.init == NULL) {
        LOAD_FAIL(lp,
                  "%s: the descriptor has no init function; pass one to "
                  "RLMCP_PLUGIN_DEFINE",
                  lp->path);
        return -1;
    }
    if (!valid_desc_name(lp->desc.name)) {
        LOAD_FAIL(lp,
                  "%s: the descriptor's name is missing or not [a-z0-9_]+; fix "
                  "RLMCP_PLUGIN_DEFINE's first argument",
                  lp->path);
        return -1;
    }
    if (strcmp(lp->desc.name, lp->name) != 0) {
        LOAD_FAIL(lp,
                  "%s: this file is plugin '%s', not '%s'; fix plugins[].name "
                  "or plugins[].path in the deployment",
                  lp->path, lp->desc.name, lp->name);
        return -1;
    }
    return 0;
}

static bool already_loaded(const struct loader *l,
                           const struct loaded_plugin *lp)
{
    size_t i = 0;

    for (i = 0; i < l->n_plugins; i++) {
        if (l->plugins[i]->dl == lp->dl ||
            strcmp(l->plugins[i]->name, lp->name) == 0) {
            LOAD_FAIL(
                lp, "%s: already loaded as plugin '%s'; list each plugin once",
                lp->path, l->plugins[i]->name);
            return true;
        }
    }
    return false;
}

static int open_plugin(struct loader *l, struct loaded_plugin *lp)
{
    rlmcp_descriptor_fn fn = NULL;
    const struct rlmcp_plugin_desc *d = NULL;
    void *sym = NULL;

    dlerror();
    lp->dl = dlopen(lp->path, RTLD_NOW | RTLD_LOCAL);
    if (lp->dl == NULL) {
        const char *why = dlerror();
        LOAD_FAIL(lp,
                  "%s: cannot load: %s; build the plugin or fix "
                  "host.plugin_dir / plugins[].path (host ABI %d.%d)",
                  lp->path, why ? why : "unknown error", RLMCP_ABI_MAJOR,
                  RLMCP_ABI_MINOR);
        return -1;
    }
    if (already_loaded(l, lp))
        return -1;
    sym = dlsym(lp->dl, RLMCP_DESCRIPTOR_SYMBOL);
    if (sym == NULL) {
        LOAD_FAIL(lp,
                  "%s: not a runloop-mcp plugin: no %s() symbol; define it "
                  "with RLMCP_PLUGIN_DEFINE and build with visibility for it "
                  "(host ABI %d.%d)",
                  lp->path, RLMCP_DESCRIPTOR_SYMBOL, RLMCP_ABI_MAJOR,
                  RLMCP_ABI_MINOR);
        return -1;
    }
    /* POSIX: dlsym's object pointer converts to a function pointer. */
    memcpy(&fn, &sym, sizeof(fn));
    d = fn();
    if (d == NULL) {
        LOAD_FAIL(lp,
                  "%s: %s() returned NULL; it must return a static descriptor",
                  lp->path, RLMCP_DESCRIPTOR_SYMBOL);
        return -1;
    }
    return check_desc(lp, d);
}

/*
 * Keep what the plugin registered, as registered: later deployments copy
 * it (registry_copy_plugin). On failure the plugin is shut down and its
 * registrations undone.
 */
static int make_origin(struct loaded_plugin *lp)
{
    char err[512] = "out of memory";

    lp->origin = registry_new();
    if (lp->origin != NULL && registry_copy_plugin(lp->origin, lp->reg, lp, err,
                                                   sizeof(err)) == RLMCP_OK) {
        lp->reg = NULL; /* registering ends with init */
        return 0;
    }
    LOAD_FAIL(lp, "%s: %s", lp->path, err);
    if (lp->desc.shutdown != NULL)
        lp->desc.shutdown(loader_handle(lp), lp->state);
    lp->initialized = false;
    registry_remove_plugin(lp->reg, lp);
    registry_free(lp->origin);
    lp->origin = NULL;
    return -1;
}

static int init_plugin(struct loaded_plugin *lp)
{
    int rc = RLMCP_OK;

    lp->in_init = true;
    rc = lp->desc.init(loader_handle(lp), lp->api, &lp->state);
    lp->in_init = false;
    if (rc != RLMCP_OK) {
        LOAD_FAIL(lp,
                  "%s: init failed: %s (%s); fix the plugin's config section "
                  "or see the plugin's documentation",
                  lp->path, lp->init_error ? lp->init_error : "no reason given",
                  lp->api->strerror(rc));
        /* Undo: nothing it registered survives, its user data is freed. */
        registry_remove_plugin(lp->reg, lp);
        lp->state = NULL;
        return -1;
    }
    lp->initialized = true;
    if (make_origin(lp) < 0)
        return -1;
    log_msg(RLMCP_LOG_DEBUG, lp->name, "loaded %s (version %s, ABI %u.%u)",
            lp->path, lp->desc.version ? lp->desc.version : "?",
            lp->desc.abi_major, lp->desc.abi_minor);
    return 0;
}

/*
 * A plugin that declares its config's schema (ABI 1.5) gets only a config
 * valid against it: else the load fails with the file:line:col of the
 * offending value. A schema that is not valid is the plugin's fault.
 */
static int check_config(const struct loader *l, struct loaded_plugin *lp,
                        const struct host_plugin_config *p)
{
    char err[1024] = "";
    cJSON *schema = NULL;
    cJSON *config = NULL;
    struct config_pos at;
    int rc = -1;

    if (lp->desc.config_schema == NULL)
        return 0;
    schema = cJSON_Parse(lp->desc.config_schema);
    if (schema == NULL || schema_check(schema, err, sizeof(err)) != 0) {
        LOAD_FAIL(lp,
                  "%s: the plugin's config schema is not a valid JSON "
                  "Schema: %s; fix the plugin (config_schema)",
                  lp->path, schema == NULL ? "not JSON" : err);
        goto out;
    }
    config = cJSON_Parse(lp->config_json);
    if (config == NULL) {
        LOAD_FAIL(lp, "out of memory parsing the plugin's config");
        goto out;
    }
    if (schema_validate(schema, config, "config", err, sizeof(err)) != 0) {
        at = config_mark_find(p, err);
        LOAD_FAIL(lp,
                  "%s:%u:%u: plugin '%s': %s; fix this value of its "
                  "config: section (see the plugin's documentation)",
                  l->file != NULL ? l->file : "deployment", at.line, at.col,
                  lp->name, err);
        goto out;
    }
    rc = 0;
out:
    cJSON_Delete(schema);
    cJSON_Delete(config);
    return rc;
}

static struct loaded_plugin *
load_one(struct loader *l, const struct host_plugin_config *p, const char *dir)
{
    struct loaded_plugin *lp = calloc(1, sizeof(*lp));

    if (lp == NULL)
        goto oom;
    lp->handle.lp = lp;
    atomic_init(&lp->refs, 1);
    lp->reg = l->reg;
    lp->api = l->api;
    lp->name = strdup(p->name);
    lp->path = plugin_path(p, dir);
    lp->config_json = strdup(p->config_json ? p->config_json : "{}");
    if (lp->name == NULL || lp->path == NULL || lp->config_json == NULL)
        goto oom;
    lp->config_len = strlen(lp->config_json);
    if (open_plugin(l, lp) < 0 || check_config(l, lp, p) < 0 ||
        init_plugin(lp) < 0)
        goto fail;
    return lp;
oom:
    log_msg(RLMCP_LOG_ERROR, p->name, "out of memory loading the plugin");
fail:
    if (lp != NULL && lp->dl != NULL)
        dlclose(lp->dl);
    plugin_free(lp);
    return NULL;
}

/*
 * The plugin of old that p names unchanged (same resolved path, same
 * config), referenced and its registrations copied into l->reg; NULL when
 * there is none. *failed is set when copying failed (a name clash).
 */
static struct loaded_plugin *keep_one(struct loader *l,
                                      const struct loader *old,
                                      const struct host_plugin_config *p,
                                      const char *dir, bool *failed)
{
    struct loaded_plugin *lp = NULL;
    char *path = plugin_path(p, dir);
    const char *json = p->config_json ? p->config_json : "{}";
    char err[512] = "";
    size_t i = 0;

    *failed = false;
    for (i = 0; old != NULL && path != NULL && i < old->n_plugins; i++) {
        struct loaded_plugin *o = old->plugins[i];
        if (strcmp(o->name, p->name) == 0 && strcmp(o->path, path) == 0 &&
            strcmp(o->config_json, json) == 0 && o->initialized) {
            lp = o;
            break;
        }
    }
    free(path);
    if (lp == NULL)
        return NULL;
    if (registry_copy_plugin(l->reg, lp->origin, lp, err, sizeof(err)) !=
        RLMCP_OK) {
        LOAD_FAIL(lp, "%s: %s", lp->path, err);
        *failed = true;
        return NULL;
    }
    atomic_fetch_add(&lp->refs, 1);
    l->n_kept++;
    log_msg(RLMCP_LOG_INFO, lp->name,
            "path and config unchanged: kept as loaded (not initialised "
            "again)");
    return lp;
}

int loader_load_all(const struct host_config *cfg, struct registry *reg,
                    const struct rlmcp_host_api *api, struct loader **out)
{
    return loader_reload(cfg, reg, api, NULL, out);
}

int loader_reload(const struct host_config *cfg, struct registry *reg,
                  const struct rlmcp_host_api *api, const struct loader *old,
                  struct loader **out)
{
    struct loader *l = calloc(1, sizeof(*l));
    char *dir = loader_plugin_dir(cfg);
    bool skip = cfg->host.on_plugin_error == HOST_PLUGIN_ERROR_SKIP;
    bool clash = false;
    size_t i = 0;

    *out = NULL;
    if (l == NULL || dir == NULL)
        goto oom;
    l->reg = reg;
    l->file = cfg->path;
    l->api = api;
    l->plugins = calloc(cfg->n_plugins + 1, sizeof(*l->plugins));
    if (l->plugins == NULL)
        goto oom;
    for (i = 0; i < cfg->n_plugins; i++) {
        const struct host_plugin_config *p = &cfg->plugins[i];
        struct loaded_plugin *lp = NULL;
        if (!p->enabled) {
            log_msg(RLMCP_LOG_DEBUG, p->name,
                    "disabled in the deployment; not loaded");
            continue;
        }
        lp = keep_one(l, old, p, dir, &clash);
        if (lp == NULL && !clash)
            lp = load_one(l, p, dir);
        if (lp != NULL) {
            l->plugins[l->n_plugins++] = lp;
            continue;
        }
        if (!skip || clash) {
            log_msg(RLMCP_LOG_ERROR, NULL,
                    "%s: plugin '%s' failed to load; fix it, or set "
                    "host.on_plugin_error: skip to start without it",
                    cfg->path ? cfg->path : "deployment", p->name);
            goto fail;
        }
        log_msg(
            RLMCP_LOG_WARNING, p->name,
            "skipped (host.on_plugin_error: skip); its tools are not offered");
        l->n_skipped++;
    }
    free(dir);
    *out = l;
    return 0;
oom:
    log_msg(RLMCP_LOG_ERROR, NULL, "out of memory loading plugins");
fail:
    free(dir);
    loader_unload_all(l);
    return -1;
}

void loader_unload_all(struct loader *l)
{
    size_t i = 0;

    if (l == NULL)
        return;
    /* Reverse order: later plugins may rely on earlier ones. */
    for (i = l->n_plugins; i-- > 0;) {
        struct loaded_plugin *lp = l->plugins[i];
        lp->dying = atomic_fetch_sub(&lp->refs, 1) == 1;
    }
    for (i = l->n_plugins; i-- > 0;) {
        struct loaded_plugin *lp = l->plugins[i];
        if (lp->dying && lp->initialized && lp->desc.shutdown != NULL)
            lp->desc.shutdown(loader_handle(lp), lp->state);
        if (lp->dying)
            lp->initialized = false;
    }
    /* user_data_free is plugin code: before dlclose. */
    for (i = l->n_plugins; i-- > 0;) {
        struct loaded_plugin *lp = l->plugins[i];
        if (lp->dying && lp->origin != NULL)
            registry_release_plugin(lp->origin, lp);
    }
    for (i = l->n_plugins; i-- > 0;) {
        struct loaded_plugin *lp = l->plugins[i];
        if (!lp->dying)
            continue;
        if (lp->dl != NULL && getenv("RLMCP_NO_DLCLOSE") == NULL)
            dlclose(lp->dl);
        plugin_free(lp);
    }
    free(l->plugins);
    free(l);
}
