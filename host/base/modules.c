/*
 * modules.c - loads the host's optional parts on first use (see modules.h).
 */
#define _GNU_SOURCE
#include "modules.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errbuf.h"
#include "exe_dir.h"
#include "module_crypto.h"
#include "module_curl.h"
#include "log.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif
#ifndef RLMCP_INSTALL_MODULE_DIR
#define RLMCP_INSTALL_MODULE_DIR "/usr/local/lib/runloop-mcp/modules"
#endif

struct module_slot {
    const char *name; /* file rlmcp_<name>.so, table rlmcp_module_<name> */
    const char *what; /* for messages */
    size_t min_size;  /* the table's size in this host */
    pthread_once_t once;
    const void *table; /* NULL until loaded */
    char err[768];     /* why it is not, once tried */
};

static struct module_slot slots[MODULE_COUNT] = {
    [MODULE_HTTP] = {"http", "the Streamable HTTP transport",
                     sizeof(struct module_http), PTHREAD_ONCE_INIT, NULL, ""},
    [MODULE_WS] = {"ws", "the WebSocket client", sizeof(struct module_ws),
                   PTHREAD_ONCE_INIT, NULL, ""},
    [MODULE_CURL] = {"curl", "the HTTP client (libcurl)",
                     sizeof(struct module_curl), PTHREAD_ONCE_INIT, NULL, ""},
    [MODULE_CRYPTO] = {"crypto", "the digest functions (libcrypto)",
                       sizeof(struct module_crypto), PTHREAD_ONCE_INIT, NULL,
                       ""},
};

char *modules_dir(void)
{
    /* The build tree and an installed tree moved elsewhere both keep the
     * modules at <bindir>/../lib/runloop-mcp/modules. */
    static const char *const rel[] = {"/../lib/runloop-mcp/modules",
                                      "/../lib64/runloop-mcp/modules"};
    const char *env = getenv("RLMCP_MODULE_DIR");
    char *out = NULL;

    if (env != NULL && env[0] != '\0')
        return strdup(env);
    out = exe_dir_beside(rel, sizeof(rel) / sizeof(rel[0]));
    return out != NULL ? out : strdup(RLMCP_INSTALL_MODULE_DIR);
}

/* Check the table a module exports against what this host expects. */
static const void *check_table(struct module_slot *m, const char *path,
                               const struct module_head *h)
{
    if (h->abi != MODULE_ABI || h->size < m->min_size || h->version == NULL ||
        strcmp(h->version, RLMCP_VERSION) != 0) {
        snprintf(m->err, sizeof(m->err),
                 "%s module %s belongs to another build (version %s, module "
                 "ABI %u; this host is %s, module ABI %u): reinstall "
                 "runloop-mcp so the program and its modules match",
                 m->what, path, h->version != NULL ? h->version : "?", h->abi,
                 RLMCP_VERSION, MODULE_ABI);
        return NULL;
    }
    return h;
}

static void load_slot(struct module_slot *m)
{
    char *dir = modules_dir();
    char *path = NULL;
    char sym[64];
    void *dl = NULL;
    const struct module_head *h = NULL;

    if (dir == NULL || asprintf(&path, "%s/rlmcp_%s.so", dir, m->name) < 0) {
        path = NULL;
        snprintf(m->err, sizeof(m->err), "out of memory loading %s", m->what);
        goto out;
    }
    if (access(path, R_OK) != 0) {
        snprintf(m->err, sizeof(m->err),
                 "%s is not installed: %s is missing (install the complete "
                 "runloop-mcp package, or set RLMCP_MODULE_DIR to the "
                 "directory holding rlmcp_%s.so)",
                 m->what, path, m->name);
        goto out;
    }
    /* Never unloaded: threads of the module may outlive any caller, and
     * ASan reports leaks with the stacks of mapped objects only. */
    dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (dl == NULL) {
        snprintf(m->err, sizeof(m->err), "%s module %s cannot be loaded: %s",
                 m->what, path, dlerror());
        goto out;
    }
    snprintf(sym, sizeof(sym), "rlmcp_module_%s", m->name);
    h = dlsym(dl, sym);
    if (h == NULL) {
        snprintf(m->err, sizeof(m->err),
                 "%s module %s does not export %s: it is not a runloop-mcp "
                 "module of this version",
                 m->what, path, sym);
        goto out;
    }
    m->table = check_table(m, path, h);
    if (m->table != NULL)
        log_msg(RLMCP_LOG_DEBUG, NULL, "loaded %s from %s", m->what, path);
out:
    free(path);
    free(dir);
}

static void load_http(void)
{
    load_slot(&slots[MODULE_HTTP]);
}
static void load_ws(void)
{
    load_slot(&slots[MODULE_WS]);
}
static void load_curl(void)
{
    load_slot(&slots[MODULE_CURL]);
}
static void load_crypto(void)
{
    load_slot(&slots[MODULE_CRYPTO]);
}

const void *modules_get(enum module_id id, char *err, size_t errlen)
{
    static void (*const loaders[MODULE_COUNT])(void) = {
        [MODULE_HTTP] = load_http,
        [MODULE_WS] = load_ws,
        [MODULE_CURL] = load_curl,
        [MODULE_CRYPTO] = load_crypto,
    };
    struct module_slot *m = NULL;

    if ((unsigned)id >= MODULE_COUNT)
        return NULL;
    m = &slots[id];
    pthread_once(&m->once, loaders[id]);
    if (m->table == NULL)
        errbuf_set(err, errlen, "%s", m->err);
    return m->table;
}

int modules_http_serve(struct mcp_dispatcher *d, const struct host_config *cfg)
{
    char err[768] = "";
    const struct module_http *mod = modules_get(MODULE_HTTP, err, sizeof(err));

    if (mod == NULL) {
        log_msg(RLMCP_LOG_ERROR, NULL, "http: %s", err);
        return 1;
    }
    return mod->serve(d, cfg);
}

int modules_ws_pty_exchange(const char *origin, const char *token,
                            struct rlmcp_pty_exchange *x,
                            bool (*cancelled)(void *ctx), void *cancel_ctx,
                            char *err, size_t errlen)
{
    const struct module_ws *mod = modules_get(MODULE_WS, err, errlen);

    if (mod == NULL)
        return RLMCP_EINTERNAL;
    return mod->pty_exchange(origin, token, x, cancelled, cancel_ctx, err,
                             errlen);
}
