/* devboxd PTY sessions, engine side: starts devboxd-ptyd inside each devbox
 * as it boots (listening on 127.0.0.1:13 of the devbox's network namespace,
 * a socket devboxd creates there) and relays PTY-tunnel connections, which
 * the tunnel listener hands over once their token checked out, to it.
 * See docs/devboxd.md, "PTY". */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine.h"
#include "pty_engine.h"
#include "sandbox.h"
#include "tunnel.h"

#define PTYD_INSIDE "/run/devbox/ptyd"
#define RELAY_BUF (64 * 1024)
#define CHECK_MS 250

/* The ptyd handle of each devbox's current boot. */
struct ptyd_proc {
    char box_id[40];
    struct sb_proc *proc;
    struct ptyd_proc *next;
};

static pthread_mutex_t pty_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ptyd_proc *procs;
static int pty_stopping;
static int pty_relays;
static pthread_cond_t relays_done = PTHREAD_COND_INITIALIZER;

static void remember(const char *box_id, struct sb_proc *p)
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
    if (e == NULL && p != NULL) {
        e = calloc(1, sizeof(*e));
        if (e != NULL) {
            snprintf(e->box_id, sizeof(e->box_id), "%s", box_id);
            e->next = procs;
            procs = e;
        }
    }
    if (e != NULL) {
        sb_proc_free(e->proc); /* the previous boot's handle */
        e->proc = p;
    } else {
        sb_proc_free(p);
    }
    pthread_mutex_unlock(&pty_lock);
}

static int idle_ttl(void)
{
    const char *v = getenv("DEVBOXD_PTY_IDLE_TTL");
    long n = v != NULL ? strtol(v, NULL, 10) : 0;

    return n >= 1 && n <= 7 * 24 * 3600 ? (int)n : 1800;
}

void pty_engine_boot(struct engine *eng, struct devbox *box, struct sandbox *sb)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char cmd[256];
    char err[256] = "";
    char msg[400];
    int lfd = sandbox_listen_tcp(sb, TUNNEL_PTY_PORT);

    if (lfd < 0) {
        snprintf(err, sizeof(err), "port %d inside: %s", TUNNEL_PTY_PORT, strerror(-lfd));
        goto fail;
    }
    /* The listening socket arrives as stdout; ptyd takes it as fd 3. */
    snprintf(cmd, sizeof(cmd), "test -x " PTYD_INSIDE " || { echo missing >&2; exit 127; }; "
             "exec " PTYD_INSIDE " --listen-fd 3 --idle-ttl %d 3>&1 >/dev/null", idle_ttl());
    memset(&req, 0, sizeof(req));
    req.command = cmd;
    req.stdout_fd = lfd;
    req.stderr_fd = -1;
    if (sandbox_exec(sb, &req, &p, err, sizeof(err)) != 0)
        goto fail;
    close(lfd);
    remember(box->id, p);
    return;
fail:
    if (lfd >= 0)
        close(lfd);
    snprintf(msg, sizeof(msg), "PTY server not started (PTY sessions unavailable): %s", err);
    pthread_mutex_lock(&eng->lock);
    engine_log_locked(eng, box, "entrypoint", "warn", msg, NULL, 0);
    pthread_mutex_unlock(&eng->lock);
}

/* ---------------------------------------------------------------- relay */

static void answer(int fd, int status, const char *msg)
{
    char buf[768];
    int n = snprintf(buf, sizeof(buf), "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n{\"message\":\"%s\"}",
                     status, status == 502 ? "Bad Gateway" : "Service Unavailable",
                     strlen(msg) + 14, msg);

    if (n > 0 && write(fd, buf, (size_t)n) < 0)
        return;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Still worth relaying: devboxd not stopping, the devbox still running. */
static int still_running(struct engine *eng, const char *box_id, int moved)
{
    struct devbox *box = NULL;
    int ok;

    pthread_mutex_lock(&pty_lock);
    ok = !pty_stopping;
    pthread_mutex_unlock(&pty_lock);
    if (!ok)
        return 0;
    pthread_mutex_lock(&eng->lock);
    box = engine_find_locked(eng, box_id);
    ok = box != NULL && box->status == DBX_RUNNING && box->sb != NULL && !eng->stopping;
    if (ok && moved)
        engine_touch_locked(box);
    pthread_mutex_unlock(&eng->lock);
    return ok;
}

/* One direction: 1 moved bytes, 0 EOF (other side half-closed), -1 error. */
static int pump(int from, int to, char *buf)
{
    ssize_t n = recv(from, buf, RELAY_BUF, 0);
    int one = 1;

    setsockopt(from, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    if (n < 0)
        return -1;
    if (n == 0) {
        shutdown(to, SHUT_WR);
        return 0;
    }
    return write_all(to, buf, (size_t)n) == 0 ? 1 : -1;
}

static void relay(struct engine *eng, const char *box_id, int cfd, int ufd)
{
    char *buf = malloc(RELAY_BUF);
    struct pollfd pf[2];
    int open_dirs = 2;

    if (buf == NULL)
        return;
    pf[0].fd = cfd;
    pf[1].fd = ufd;
    while (open_dirs > 0) {
        int moved = 0;
        int i;
        int n;

        pf[0].events = pf[0].fd >= 0 ? POLLIN : 0;
        pf[1].events = pf[1].fd >= 0 ? POLLIN : 0;
        n = poll(pf, 2, CHECK_MS);
        if (n < 0 && errno != EINTR)
            break;
        for (i = 0; n > 0 && i < 2; i++) {
            int rc;

            if (pf[i].fd < 0 || pf[i].revents == 0)
                continue;
            rc = pump(pf[i].fd, i == 0 ? ufd : cfd, buf);
            if (rc < 0)
                goto out;
            if (rc == 0) {
                pf[i].fd = -1;
                open_dirs--;
            }
            moved = 1;
        }
        if ((n == 0 || moved) && !still_running(eng, box_id, moved))
            break;
    }
out:
    free(buf);
}

static int connect_ptyd(struct engine *eng, const char *box_id, char *err, size_t errlen)
{
    struct devbox *box = NULL;
    struct sandbox *sb = NULL;
    int fd;

    pthread_mutex_lock(&eng->lock);
    box = engine_find_locked(eng, box_id);
    if (box != NULL && box->status == DBX_RUNNING && box->sb != NULL) {
        box->io_refs++; /* keeps sb from being stopped during the connect */
        sb = box->sb;
    }
    pthread_mutex_unlock(&eng->lock);
    if (sb == NULL) {
        snprintf(err, errlen, "devbox %s is not running", box_id);
        return -ESRCH;
    }
    fd = sandbox_connect_tcp(sb, TUNNEL_PTY_PORT, 5000);
    pthread_mutex_lock(&eng->lock);
    box->io_refs--;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    if (fd < 0)
        snprintf(err, errlen, "the PTY server does not answer inside devbox %s (%s); see "
                 "the devbox logs", box_id, strerror(-fd));
    return fd;
}

static void handle_conn(void *ud, struct engine *eng, const char *box_id, int fd,
                        const char *buf, size_t len)
{
    char err[300];
    int one = 1;
    int ufd = -1;

    (void)ud;
    pthread_mutex_lock(&pty_lock);
    pty_relays++;
    pthread_mutex_unlock(&pty_lock);
    ufd = connect_ptyd(eng, box_id, err, sizeof(err));
    if (ufd < 0) {
        answer(fd, ufd == -ESRCH ? 503 : 502, err);
        goto out;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (write_all(ufd, buf, len) == 0)
        relay(eng, box_id, fd, ufd);
out:
    if (ufd >= 0)
        close(ufd);
    close(fd);
    pthread_mutex_lock(&pty_lock);
    pty_relays--;
    pthread_cond_broadcast(&relays_done);
    pthread_mutex_unlock(&pty_lock);
}

void pty_engine_init(void)
{
    tunnel_set_pty_handler(handle_conn, NULL);
}

void pty_engine_shutdown(void)
{
    struct ptyd_proc *e = NULL;

    pthread_mutex_lock(&pty_lock);
    pty_stopping = 1;
    while (pty_relays > 0)
        pthread_cond_wait(&relays_done, &pty_lock); /* each notices within CHECK_MS */
    while (procs != NULL) {
        e = procs;
        procs = e->next;
        sb_proc_free(e->proc);
        free(e);
    }
    pthread_mutex_unlock(&pty_lock);
}
