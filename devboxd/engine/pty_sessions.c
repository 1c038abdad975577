/* devboxd PTY sessions, engine side: starts devboxd-ptyd inside each devbox
 * as it boots (listening on 127.0.0.1:13 of the devbox's network namespace,
 * a socket devboxd creates there, since the devbox user cannot bind a port
 * below 1024). The tunnel listener relays PTY-tunnel connections to that
 * port once their token checked out (tunnel_proxy.c).
 * See docs/devboxd.md, "PTY". */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "pty_sessions.h"
#include "sandbox.h"
#include "tunnels.h"
#include "util.h"

#define PTYD_INSIDE "/run/devbox/ptyd"

/* The ptyd handle of each devbox's current boot, and the key its ptyd
 * wants first on every connection (a new one each boot). */
struct ptyd_proc {
    char box_id[40];
    char key[PTY_KEY_LEN + 1];
    struct sb_proc *proc;
    struct ptyd_proc *next;
};

static pthread_mutex_t pty_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ptyd_proc *procs;
static int pty_stopping;

static void remember(const char *box_id, struct sb_proc *p, const char *key)
{
    struct ptyd_proc **pp;
    struct ptyd_proc *e = NULL;

    pthread_mutex_lock(&pty_lock);
    for (pp = &procs; *pp != NULL; pp = &(*pp)->next) {
        if (strcmp((*pp)->box_id, box_id) == 0) {
            e = *pp;
            break;
        }
    }
    if (e == NULL && p != NULL && !pty_stopping) {
        e = calloc(1, sizeof(*e));
        if (e != NULL) {
            snprintf(e->box_id, sizeof(e->box_id), "%s", box_id);
            e->next = procs;
            procs = e;
        }
    }
    if (e != NULL) {
        sandbox_exec_free(e->proc); /* the previous boot's handle */
        e->proc = p;
        snprintf(e->key, sizeof(e->key), "%s", key);
    } else {
        sandbox_exec_free(p);
    }
    pthread_mutex_unlock(&pty_lock);
}

void pty_engine_boot(struct engine *eng, struct devbox *box, struct sandbox *sb)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char key[PTY_KEY_LEN + 2];
    char cmd[256];
    char err[256] = "";
    char msg[400];
    int ttl;
    int ping_timeout;
    int ping_interval;
    int lfd = sandbox_listen_tcp(sb, TUNNEL_PTY_PORT);

    if (lfd < 0) {
        snprintf(err, sizeof(err), "port %d inside: %s", TUNNEL_PTY_PORT,
                 strerror(-lfd));
        goto fail;
    }
    /* The listening socket arrives as stdout; ptyd takes it as fd 3. */
    ttl = eng->settings.pty_idle_ttl_s;
    ping_timeout = eng->settings.pty_ping_timeout_s;
    ping_interval = ping_timeout / 3 < 1    ? 1
                    : ping_timeout / 3 > 20 ? 20
                                            : ping_timeout / 3;
    /* The key goes through ptyd's stdin, never its command line or
     * environment (which other accounts of the devbox could read). */
    snprintf(cmd, sizeof(cmd),
             "exec " PTYD_INSIDE " --listen-fd 3 --key-fd 0 --idle-ttl %d "
             "--ping-timeout %d --ping-interval %d 3>&1 >/dev/null",
             ttl, ping_timeout, ping_interval);
    util_random_text(key, PTY_KEY_LEN, "0123456789abcdef");
    key[PTY_KEY_LEN] = '\0';
    memset(&req, 0, sizeof(req));
    req.command = cmd;
    req.stdout_fd = lfd;
    req.stderr_fd = -1;
    req.want_stdin = true;
    if (sandbox_exec(sb, &req, &p, err, sizeof(err)) != 0)
        goto fail;
    close(lfd);
    lfd = -1;
    key[PTY_KEY_LEN] = '\n';
    if (sandbox_exec_write_stdin(p, key, PTY_KEY_LEN + 1) != 0) {
        snprintf(err, sizeof(err), "cannot give the PTY server its key");
        sandbox_exec_close_stdin(p);
        sandbox_exec_free(p);
        goto fail;
    }
    sandbox_exec_close_stdin(p);
    key[PTY_KEY_LEN] = '\0';
    remember(box->id, p, key);
    explicit_bzero(key, sizeof(key));
    return;
fail:
    if (lfd >= 0)
        close(lfd);
    snprintf(msg, sizeof(msg),
             "PTY server not started (PTY sessions unavailable): %s", err);
    pthread_mutex_lock(&eng->lock);
    engine_log_locked(eng, box, "entrypoint", "warn", msg, NULL, 0);
    pthread_mutex_unlock(&eng->lock);
}

int pty_engine_key(const char *box_id, char *out, size_t outlen)
{
    struct ptyd_proc *e;
    int rc = -1;

    pthread_mutex_lock(&pty_lock);
    for (e = procs; e != NULL; e = e->next) {
        if (strcmp(e->box_id, box_id) == 0 && e->proc != NULL &&
            e->key[0] != '\0') {
            rc = snprintf(out, outlen, "%s", e->key) < (int)outlen ? 0 : -1;
            break;
        }
    }
    pthread_mutex_unlock(&pty_lock);
    return rc;
}

void pty_engine_forget(const char *box_id)
{
    struct ptyd_proc **pp;

    pthread_mutex_lock(&pty_lock);
    for (pp = &procs; *pp != NULL; pp = &(*pp)->next) {
        struct ptyd_proc *e = *pp;

        if (strcmp(e->box_id, box_id) == 0) {
            *pp = e->next;
            sandbox_exec_free(e->proc);
            free(e);
            break;
        }
    }
    pthread_mutex_unlock(&pty_lock);
}

void pty_engine_shutdown(void)
{
    struct ptyd_proc *e = NULL;

    pthread_mutex_lock(&pty_lock);
    pty_stopping = 1;
    while (procs != NULL) {
        e = procs;
        procs = e->next;
        sandbox_exec_free(e->proc);
        free(e);
    }
    pthread_mutex_unlock(&pty_lock);
}
