/* devboxd: the local Runloop-compatible devbox engine.
 *
 *   devboxd --state-dir DIR [--listen unix:PATH|HOST:PORT]... [--api-key-file
 * FILE]
 *           [--allow-non-loopback] [--tunnel-listen HOST:PORT]
 *           [--tunnel-url-template URL]
 *
 * Flags and environment are read once, by config.c (devboxd --help).
 */
#define _GNU_SOURCE
#include "api.h"
#include "config.h"
#include "engine.h"
#include "http_server.h"
#include "idempotency.h"
#include "mcphub.h"
#include "pty_sessions.h"
#include "tunnels.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DEVBOXD_VERSION
#define DEVBOXD_VERSION "0.0.0"
#endif

static int lock_state_dir(const char *dir)
{
    char path[4200];
    int fd;

    snprintf(path, sizeof(path), "%s/devboxd.lock", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "devboxd: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr,
                "devboxd: another devboxd already serves state dir %s (lock %s "
                "is held); stop it or use another --state-dir\n",
                dir, path);
        close(fd);
        return -1;
    }
    return fd;
}

static char *trim_key(char *s)
{
    size_t len = strlen(s);

    while (len > 0 &&
           (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
        s[--len] = '\0';
    return s;
}

static char *load_api_key(const char *dir, const char *file)
{
    char path[4200];
    char *key = NULL;
    char hex[49];
    char *text = NULL;

    if (file != NULL) {
        key = util_read_file(file, 4096, NULL);
        if (key == NULL || trim_key(key)[0] == '\0') {
            fprintf(
                stderr,
                "devboxd: cannot read an API key from --api-key-file %s (it "
                "must hold one non-empty line)\n",
                file);
            free(key);
            return NULL;
        }
        return key;
    }
    snprintf(path, sizeof(path), "%s/api-key", dir);
    key = util_read_file(path, 4096, NULL);
    if (key != NULL && trim_key(key)[0] != '\0')
        return key;
    free(key);
    util_random_text(hex, sizeof(hex) - 1, "0123456789abcdef");
    if (asprintf(&text, "ak_local_%s\n", hex) < 0)
        return NULL;
    if (util_write_atomic(path, text, strlen(text), 0600) != 0) {
        fprintf(stderr, "devboxd: cannot write %s: %s\n", path,
                strerror(errno));
        free(text);
        return NULL;
    }
    return trim_key(text);
}

static int write_pid_file(const char *dir, const char *const *addrs,
                          const int *ports, int n, int tunnel_port,
                          const char *tunnel_template)
{
    char path[4200];
    char buf[4096];
    size_t len;
    int i;

    snprintf(path, sizeof(path), "%s/devboxd.pid", dir);
    len = (size_t)snprintf(buf, sizeof(buf), "pid %d\n", (int)getpid());
    for (i = 0; i < n && len < sizeof(buf); i++) {
        if (ports[i] > 0)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "port %d\n",
                                    ports[i]);
        else
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "unix %s\n",
                                    addrs[i] + 5);
    }
    /* Last, so readers of the first "port" line are unaffected. */
    if (len < sizeof(buf))
        len += (size_t)snprintf(buf + len, sizeof(buf) - len,
                                "tunnel_port %d\ntunnel_url_template %s\n"
                                "tunnel_path_url_template %s\nversion %s\n",
                                tunnel_port, tunnel_template,
                                tunnel_path_url_template(), DEVBOXD_VERSION);
    return util_write_atomic(path, buf,
                             len < sizeof(buf) ? len : sizeof(buf) - 1, 0644);
}

/* The host the path tunnel template names: the --tunnel-listen address,
 * 127.0.0.1 for loopback and wildcard ones (devboxes reach 127.0.0.1:P
 * inside, see tunnel_server_boot). */
static const char *path_host_of(const char *spec, char *buf, size_t n)
{
    const char *port = NULL;

    if (spec == NULL || util_split_hostport(spec, buf, n, &port) != 0 ||
        strcmp(buf, "127.0.0.1") == 0 || strcmp(buf, "0.0.0.0") == 0 ||
        strcmp(buf, "::") == 0 || strcmp(buf, "::1") == 0 ||
        strcasecmp(buf, "localhost") == 0)
        return "127.0.0.1";
    return buf;
}

/* The tunnel listener, for the sandbox hooks below (set once before any
 * devbox boots). */
static struct tunnel_server *hook_tunnels;

/* A devbox's sandbox started: its MCP hub and its tunnel listener socket. */
static void on_sandbox_start(struct engine *eng, struct devbox *box,
                             struct sandbox *sb)
{
    mcphub_boot(eng, box, sb);
    tunnel_server_boot(hook_tunnels, eng, box, sb);
}

static void on_sandbox_stop(const char *box_id)
{
    mcphub_forget(box_id);
    tunnel_server_forget(hook_tunnels, box_id);
}

static int open_listeners(struct http_server *srv,
                          const struct devboxd_config *o, int *ports)
{
    char err[1024];
    int i;

    for (i = 0; i < o->n_listen; i++) {
        if (http_server_listen(srv, o->listen[i], o->allow_non_loopback,
                               &ports[i], err, sizeof(err)) != 0) {
            fprintf(stderr, "devboxd: %s\n", err);
            return -1;
        }
    }
    return 0;
}

static void announce(const struct devboxd_config *o, const int *ports)
{
    int i;

    for (i = 0; i < o->n_listen; i++) {
        if (ports[i] > 0) {
            const char *colon = strrchr(o->listen[i], ':');

            fprintf(stderr, "devboxd: listening on %.*s:%d\n",
                    (int)(colon - o->listen[i]), o->listen[i], ports[i]);
        } else {
            fprintf(stderr, "devboxd: listening on %s\n", o->listen[i]);
        }
    }
    fflush(stderr);
}

static void stop_clients(struct engine *eng)
{
    pthread_mutex_lock(&eng->lock);
    eng->stopping = 1;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
}

/* Creates the state dir (0700) and returns its absolute path. */
static char *prepare_state_dir(const char *dir)
{
    char *real_dir = NULL;

    if (util_mkdirs(dir) != 0) {
        fprintf(stderr, "devboxd: cannot create state dir %s: %s\n", dir,
                strerror(errno));
        return NULL;
    }
    chmod(dir, 0700);
    real_dir = realpath(dir, NULL);
    if (real_dir == NULL)
        fprintf(stderr, "devboxd: state dir %s: %s\n", dir, strerror(errno));
    return real_dir;
}

static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
    struct devboxd_config o;
    struct engine eng;
    struct http_server *srv = NULL;
    struct tunnel_server *tun = NULL;
    int tunnel_port = 0;
    char tun_host[256];
    char err[1024];
    char *default_listen = NULL;
    char *real_dir = NULL;
    int ports[DEVBOXD_MAX_LISTEN] = {0};
    int lock_fd = -1;
    int engine_up = 0;
    int rc = 1;
    int sig = 0;
    sigset_t set;

    switch (devboxd_config_load(&o, argc, argv, err, sizeof(err))) {
    case DEVBOXD_CONFIG_RUN:
        break;
    case DEVBOXD_CONFIG_HELP:
        devboxd_config_usage(stdout);
        return 0;
    case DEVBOXD_CONFIG_VERSION:
        printf("devboxd %s\n", DEVBOXD_VERSION);
        return 0;
    case DEVBOXD_CONFIG_USAGE:
        if (err[0] != '\0')
            fprintf(stderr, "devboxd: %s\n", err);
        devboxd_config_usage(stderr);
        return 2;
    default:
        fprintf(stderr, "devboxd: %s\n", err);
        return 2;
    }
    real_dir = prepare_state_dir(o.state_dir);
    if (real_dir == NULL)
        return 1;
    /* Signals are taken by sigwait below; block them before any thread. */
    block_signals(&set);

    /* Ids, keys and tokens come from the kernel or not at all. */
    if (util_random_check() != 0) {
        fprintf(stderr,
                "devboxd: the kernel's random source (getrandom) is not "
                "available: %s; devboxd needs it for ids, keys and tokens\n",
                strerror(errno));
        goto out;
    }
    lock_fd = lock_state_dir(real_dir);
    if (lock_fd < 0)
        goto out;
    if (engine_init(&eng, real_dir, &o.engine, err, sizeof(err)) != 0) {
        fprintf(stderr, "devboxd: %s\n", err);
        goto out;
    }
    engine_up = 1;
    /* Inside each devbox: the MCP hub (when its spec has MCP servers) and
     * the tunnel listener's socket. */
    eng.on_sandbox_start = on_sandbox_start;
    eng.on_sandbox_stop = on_sandbox_stop;
    eng.api_key = load_api_key(real_dir, o.api_key_file);
    if (eng.api_key == NULL)
        goto out;
    if (o.n_listen == 0) {
        if (asprintf(&default_listen, "unix:%s/devboxd.sock", real_dir) < 0)
            goto out;
        o.listen[o.n_listen++] = default_listen;
    }
    srv = http_server_new(api_handle, &eng, err, sizeof(err));
    if (srv == NULL) {
        fprintf(stderr, "devboxd: %s\n", err);
        goto out;
    }
    http_server_set_authorizer(srv, api_authorized);
    if (open_listeners(srv, &o, ports) != 0)
        goto out;
    tun = tunnel_server_new(
        &eng, o.tunnel_listen ? o.tunnel_listen : "127.0.0.1:0",
        o.allow_non_loopback, &tunnel_port, err, sizeof(err));
    if (tun == NULL) {
        fprintf(stderr, "devboxd: %s\n", err);
        goto out;
    }
    hook_tunnels = tun;
    if (tunnel_set_url_template(
            o.tunnel_url_template,
            path_host_of(o.tunnel_listen, tun_host, sizeof(tun_host)),
            tunnel_port, err, sizeof(err)) != 0) {
        fprintf(stderr, "devboxd: %s\n", err);
        goto out;
    }
    if (engine_load(&eng, err, sizeof(err)) != 0) {
        fprintf(stderr, "devboxd: %s\n", err);
        goto out;
    }
    eng.idem = idempotency_open(real_dir, err, sizeof(err));
    if (eng.idem == NULL) {
        fprintf(stderr, "devboxd: %s\n", err);
        goto out;
    }
    if (http_server_start(srv, err, sizeof(err)) != 0 ||
        tunnel_server_start(tun, err, sizeof(err)) != 0) {
        fprintf(stderr, "devboxd: %s\n", err);
        goto out;
    }
    write_pid_file(real_dir, o.listen, ports, o.n_listen, tunnel_port,
                   tunnel_url_template());
    announce(&o, ports);
    fprintf(stderr, "devboxd: tunnels on port %d as %s/\n", tunnel_port,
            tunnel_url_template());
    while (sigwait(&set, &sig) == 0) {
        if (sig == SIGTERM || sig == SIGINT)
            break;
    }
    fprintf(stderr, "devboxd: shutting down (signal %d)\n", sig);
    /* Long-polls and streams end first, then listeners, then sandboxes. */
    stop_clients(&eng);
    rc = 0;
out:
    http_server_stop(srv);
    hook_tunnels = NULL;     /* sandboxes stopping later forget nothing */
    tunnel_server_stop(tun); /* its connections use the engine */
    pty_engine_shutdown();   /* frees the devboxd-ptyd handles */
    mcphub_shutdown();       /* stops the MCP Hub listeners */
    if (engine_up) {
        idempotency_close(eng.idem);
        engine_fini(&eng);
    }
    tunnel_url_template_clear();
    free(default_listen);
    if (lock_fd >= 0)
        close(lock_fd);
    free(real_dir);
    return rc;
}
