/*
 * reload.c - SIGHUP re-reads the deployment file (see reload.h).
 */
#define _GNU_SOURCE /* pipe2 */
#include "reload.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "deployment.h"
#include "loader.h"
#include "log.h"
#include "mcp.h"
#include "registry.h"
#include "services.h"

/* What the pipe carries, one byte each. */
#define WAKE_RELOAD 'h'
#define WAKE_IDLE 'i'
#define WAKE_STOP 's'

struct reloader {
    struct mcp_dispatcher *d;
    const struct host_config *start; /* as read at start; borrowed */
    char *path;
    int pipe[2];
    pthread_t thread;
    /* Replaced deployments still in use; the thread's alone. */
    struct deployment **retired;
    size_t n_retired;
    atomic_uint done;
    atomic_uint failed;
};

/* The pipe the handler writes to; -1 when no reloader runs. */
static volatile sig_atomic_t hup_fd = -1;

static void on_hup(int sig)
{
    int saved = errno;
    char c = WAKE_RELOAD;

    (void)sig;
    if (hup_fd >= 0 && write(hup_fd, &c, 1) < 0) {
        /* full: a reload is pending already */
    }
    errno = saved;
}

static void wake(struct reloader *r, char what)
{
    if (write(r->pipe[1], &what, 1) < 0) {
        /* full: the thread wakes anyway */
    }
}

/* A retired deployment's calls are down to the thread's reference. */
static void on_idle(void *arg)
{
    wake(arg, WAKE_IDLE);
}

/* Release the retired deployments nobody else uses (their plugins too). */
static void sweep(struct reloader *r)
{
    size_t i = 0;
    size_t kept = 0;

    for (i = 0; i < r->n_retired; i++) {
        struct deployment *dep = r->retired[i];
        if (!deployment_idle(dep)) {
            r->retired[kept++] = dep;
            continue;
        }
        deployment_unref(dep);
        log_msg(RLMCP_LOG_INFO, NULL,
                "reload: a replaced deployment's last call ended; released "
                "(plugins no longer listed are shut down and unloaded)");
    }
    r->n_retired = kept;
}

static void retire(struct reloader *r, struct deployment *old)
{
    struct deployment **grown =
        realloc(r->retired, (r->n_retired + 1) * sizeof(*r->retired));

    if (grown == NULL) {
        /* Out of memory: its last call then releases it. */
        deployment_unref(old);
        return;
    }
    r->retired = grown;
    deployment_retire(old, on_idle, r);
    r->retired[r->n_retired++] = old;
}

/*
 * The deployment cfg describes, next to cur (whose unchanged plugins it
 * keeps). NULL after logging why not; nothing of cur changed then.
 */
static struct deployment *build(const struct host_config *cfg,
                                const struct deployment *cur)
{
    struct registry *reg = registry_new();
    struct loader *ldr = NULL;
    struct deployment *dep = NULL;
    bool skip = cfg->host.on_plugin_error == HOST_PLUGIN_ERROR_SKIP;
    char err[1024] = "";

    if (reg == NULL)
        goto oom;
    if (loader_reload(cfg, reg, services_table(), cur->ldr, &ldr) < 0) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "reload: %s: a plugin failed to load (see above); still "
                "serving the previous deployment",
                cfg->path);
        goto out;
    }
    if (registry_select(reg, &cfg->tools, cfg->path, skip,
                        cfg->host.call_timeout_ms, err, sizeof(err)) < 0) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "reload: %s; still serving the previous deployment", err);
        goto out;
    }
    dep = deployment_new(reg, ldr, cfg->host.call_timeout_ms);
    if (dep == NULL)
        goto oom;
    return dep;
oom:
    log_msg(RLMCP_LOG_ERROR, NULL,
            "reload: out of memory; still serving the previous deployment");
out:
    loader_unload_all(ldr);
    registry_free(reg);
    return NULL;
}

static bool differs(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

static void note(char *list, size_t len, size_t *used, bool changed,
                 const char *name)
{
    if (!changed || *used >= len)
        return;
    *used += (size_t)snprintf(list + *used, len - *used, "%s%s",
                              *used > 0 ? ", " : "", name);
}

/* Settings read at start only that the file now changes: say so. */
static void note_restart_only(const struct host_config *was,
                              const struct host_config *now)
{
    const struct host_runloop_config *a = &was->runloop;
    const struct host_runloop_config *b = &now->runloop;
    char list[256] = "";
    size_t used = 0;

    note(list, sizeof(list), &used,
         differs(was->server.name, now->server.name) ||
             differs(was->server.instructions, now->server.instructions),
         "server");
    note(list, sizeof(list), &used,
         differs(was->server.http.raw_json, now->server.http.raw_json),
         "server.http");
    note(list, sizeof(list), &used,
         was->host.workers != now->host.workers ||
             differs(was->host.audit_log, now->host.audit_log) ||
             was->host.audit_max_bytes != now->host.audit_max_bytes ||
             was->host.audit_keep != now->host.audit_keep,
         "host.workers/audit_*");
    note(list, sizeof(list), &used,
         a->backend != b->backend || differs(a->base_url, b->base_url) ||
             differs(a->api_key, b->api_key) ||
             differs(a->state_dir, b->state_dir) ||
             differs(a->devboxd, b->devboxd),
         "runloop");
    if (used > 0)
        log_msg(RLMCP_LOG_WARNING, NULL,
                "reload: %s: %s changed; these settings are read at start "
                "only: restart to apply them",
                now->path, list);
}

static void put_field(FILE *f, const char *v)
{
    fputs(v != NULL ? v : "", f);
    fputc('\x1f', f);
}

/* What resources/list and templates/list show of reg, as one text. */
static char *resources_text(const struct registry *reg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    size_t i;

    if (f == NULL)
        return NULL;
    for (i = 0; i < registry_resource_count(reg); i++) {
        const struct resource_entry *e = registry_resource_at(reg, i);

        put_field(f, e->uri);
        put_field(f, e->uri_template);
        put_field(f, e->name);
        put_field(f, e->title);
        put_field(f, e->description);
        put_field(f, e->mime_type);
        fputc('\n', f);
    }
    fclose(f);
    return text;
}

/* What prompts/list shows of reg, as one text. */
static char *prompts_text(const struct registry *reg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    char *args = NULL;
    size_t i;

    if (f == NULL)
        return NULL;
    for (i = 0; i < registry_prompt_count(reg); i++) {
        const struct prompt_entry *p = registry_prompt_at(reg, i);

        args =
            p->arguments != NULL ? cJSON_PrintUnformatted(p->arguments) : NULL;
        put_field(f, p->name);
        put_field(f, p->title);
        put_field(f, p->description);
        put_field(f, args);
        fputc('\n', f);
        free(args);
    }
    fclose(f);
    return text;
}

/*
 * notifications/<list>/list_changed when the list's text before (was) and
 * after (now) differ; both are consumed, and a NULL (no memory) counts as
 * a change.
 */
static void notify_if_changed(struct reloader *r, const char *list, char *was,
                              char *now)
{
    bool changed = was == NULL || now == NULL || strcmp(was, now) != 0;
    unsigned sent = 0;

    free(was);
    free(now);
    if (!changed)
        return;
    sent = mcp_notify_list_changed(r->d, list);
    log_msg(RLMCP_LOG_NOTICE, NULL,
            "reload: the %s changed; notifications/%s/list_changed sent to "
            "%u session(s)",
            list, list, sent);
}

/*
 * notifications/{resources,prompts}/list_changed when the reload changed
 * what those lists show (tools/list_changed always goes: aliases and
 * limits change tools in ways a text compare would not be worth).
 */
static void notify_other_lists(struct reloader *r, const struct registry *was,
                               const struct registry *now)
{
    notify_if_changed(r, "resources", resources_text(was), resources_text(now));
    notify_if_changed(r, "prompts", prompts_text(was), prompts_text(now));
}

/* One reload: 0 when the new deployment is served. */
static int reload_once(struct reloader *r)
{
    struct host_config cfg;
    struct deployment *cur = NULL;
    struct deployment *dep = NULL;
    struct deployment *old = NULL;
    char err[1024] = "";
    unsigned sent = 0;
    int rc = -1;

    memset(&cfg, 0, sizeof(cfg));
    log_msg(RLMCP_LOG_NOTICE, NULL, "reload: reading %s", r->path);
    if (config_load(r->path, &cfg, err, sizeof(err)) < 0) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "reload: %s; still serving the previous deployment", err);
        return -1;
    }
    cur = mcp_deployment_get(r->d);
    dep = build(&cfg, cur);
    if (dep == NULL)
        goto out;
    if (mcp_replace_deployment(r->d, dep, &old) < 0) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "reload: out of memory; still serving the previous "
                "deployment");
        goto out;
    }
    retire(r, old);
    note_restart_only(r->start, &cfg);
    sent = mcp_notify_tools_changed(r->d);
    notify_other_lists(r, cur->reg, dep->reg);
    log_msg(RLMCP_LOG_NOTICE, NULL,
            "reload: %s: %zu tools from %zu plugins (%zu kept, %zu loaded, "
            "%zu skipped); notifications/tools/list_changed sent to %u "
            "session(s)",
            r->path, registry_tool_count(dep->reg), dep->ldr->n_plugins,
            dep->ldr->n_kept, dep->ldr->n_plugins - dep->ldr->n_kept,
            dep->ldr->n_skipped, sent);
    rc = 0;
out:
    deployment_unref(dep); /* the dispatcher holds its own */
    deployment_unref(cur);
    config_free(&cfg);
    return rc;
}

/* The pipe's bytes since the last wake-up: which ones came. */
static void drain_pipe(struct reloader *r, bool *reload, bool *stop)
{
    char buf[64];
    ssize_t n = 0;
    ssize_t i = 0;

    while ((n = read(r->pipe[0], buf, sizeof(buf))) > 0) {
        for (i = 0; i < n; i++) {
            if (buf[i] == WAKE_RELOAD)
                *reload = true;
            else if (buf[i] == WAKE_STOP)
                *stop = true;
        }
    }
}

static void *reload_main(void *arg)
{
    struct reloader *r = arg;
    struct pollfd pfd;
    sigset_t hup;

    /* SIGHUP is blocked in every other thread (reload_block_signal): its
     * handler runs here, and no other thread's sleep or poll is cut short. */
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_UNBLOCK, &hup, NULL);
    pfd.fd = r->pipe[0];
    pfd.events = POLLIN;
    for (;;) {
        bool reload = false;
        bool stop = false;

        if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
            log_msg(RLMCP_LOG_ERROR, NULL,
                    "reload: poll: %s; SIGHUP no "
                    "longer reloads",
                    strerror(errno));
            break;
        }
        drain_pipe(r, &reload, &stop);
        if (stop)
            break;
        /* Signals that came during a reload are served by one more. */
        if (reload && reload_once(r) != 0)
            atomic_fetch_add(&r->failed, 1);
        if (reload)
            atomic_fetch_add(&r->done, 1);
        sweep(r);
    }
    return NULL;
}

struct reloader *reload_start(struct mcp_dispatcher *d,
                              const struct host_config *start)
{
    struct reloader *r = calloc(1, sizeof(*r));
    struct sigaction sa;

    if (r == NULL)
        goto fail;
    r->pipe[0] = r->pipe[1] = -1;
    r->d = d;
    r->start = start;
    r->path = strdup(start->path);
    if (r->path == NULL || pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        goto fail;
    /* The handler first: the thread unblocks a SIGHUP that may be pending. */
    hup_fd = r->pipe[1];
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_hup;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGHUP, &sa, NULL);
    if (pthread_create(&r->thread, NULL, reload_main, r) != 0)
        goto fail;
    return r;
fail:
    hup_fd = -1;
    log_msg(RLMCP_LOG_ERROR, NULL,
            "reload: cannot start (out of memory, pipes or threads); SIGHUP "
            "is ignored");
    signal(SIGHUP, SIG_IGN);
    if (r != NULL) {
        if (r->pipe[0] >= 0)
            close(r->pipe[0]);
        if (r->pipe[1] >= 0)
            close(r->pipe[1]);
        free(r->path);
        free(r);
    }
    return NULL;
}

void reload_block_signal(void)
{
    sigset_t hup;

    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, NULL);
}

void reload_request(struct reloader *r)
{
    wake(r, WAKE_RELOAD);
}

unsigned reload_count(struct reloader *r, unsigned *failed)
{
    if (failed != NULL)
        *failed = atomic_load(&r->failed);
    return atomic_load(&r->done);
}

void reload_stop(struct reloader *r)
{
    size_t i = 0;

    if (r == NULL)
        return;
    signal(SIGHUP, SIG_IGN);
    hup_fd = -1;
    wake(r, WAKE_STOP);
    pthread_join(r->thread, NULL);
    sweep(r);
    for (i = 0; i < r->n_retired; i++) {
        /* Still used by a call that ignored the drain: it releases it. */
        deployment_unretire(r->retired[i]);
        deployment_unref(r->retired[i]);
    }
    free(r->retired);
    close(r->pipe[0]);
    close(r->pipe[1]);
    free(r->path);
    free(r);
}
