/* devboxd-ptyd sessions: a bash -i on a pseudo-terminal whose master fd is
 * adopted into the lws loop; output goes to the attached WebSocket or a
 * bounded backlog; the session outlives its clients for idle_ttl. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptyd.h"

static struct ptyd_session *sessions;

int ptyd_name_valid(const char *name)
{
    size_t n = 0;

    for (n = 0; name[n] != '\0'; n++) {
        char c = name[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '_' || c == '-';

        if (!ok || n >= PTYD_NAME_MAX)
            return 0;
    }
    return n > 0;
}

int ptyd_parse_dim(const char *s)
{
    char *end = NULL;
    long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > PTYD_DIM_MAX)
        return -1;
    return (int)v;
}

struct ptyd_session *ptyd_session_find(const char *name)
{
    struct ptyd_session *s;

    for (s = sessions; s != NULL; s = s->next)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

int ptyd_buf_append(struct ptyd_buf *b, const void *data, size_t len)
{
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *p = NULL;

        while (cap < b->len + len)
            cap *= 2;
        p = realloc(b->data, cap);
        if (p == NULL)
            return -1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

void ptyd_buf_consume(struct ptyd_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void ptyd_buf_keep_tail(struct ptyd_buf *b, size_t max)
{
    if (b->len > max)
        ptyd_buf_consume(b, b->len - max);
}

/* The child: a login-like interactive bash in the user's home. */
static void exec_shell(void)
{
    const char *home = getenv("HOME");
    sigset_t mask;

    if (home == NULL || chdir(home) != 0)
        home = "/";
    if (chdir(home) != 0)
        _exit(127);
    closefrom(3);
    setenv("TERM", "xterm-256color", 1);
    unsetenv("PTYD_LISTEN_FD");
    /* Dispositions and masks survive exec: the shell starts from defaults
     * whatever ptyd inherited (an ignored SIGINT would make Ctrl-C void). */
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigemptyset(&mask);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    execl("/bin/bash", "bash", "-i", (char *)NULL);
    _exit(127);
}

struct ptyd_session *ptyd_session_create(struct lws_vhost *vh, const char *name,
                                         int cols, int rows, char *err,
                                         size_t errlen)
{
    struct ptyd_session *s = calloc(1, sizeof(*s));
    struct winsize ws = {.ws_row = (unsigned short)rows,
                         .ws_col = (unsigned short)cols};
    lws_adopt_desc_t ad;
    int master = -1;
    pid_t pid;

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pid = forkpty(&master, NULL, NULL, &ws);
    if (pid < 0) {
        snprintf(err, errlen, "cannot create a pseudo-terminal: %s",
                 strerror(errno));
        free(s);
        return NULL;
    }
    if (pid == 0)
        exec_shell();
    fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
    fcntl(master, F_SETFD, FD_CLOEXEC);
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->master = master;
    s->pid = pid;
    s->cols = cols;
    s->rows = rows;
    s->detached_at = time(NULL);
    memset(&ad, 0, sizeof(ad));
    ad.vh = vh;
    ad.type = LWS_ADOPT_RAW_FILE_DESC;
    ad.fd.filefd = master;
    ad.vh_prot_name = "ptyd-pty";
    ad.opaque = s;
    s->next = sessions;
    sessions = s;
    s->pty_wsi = lws_adopt_descriptor_vhost_via_info(&ad);
    if (s->pty_wsi == NULL) {
        /* lws closed master */
        snprintf(err, errlen, "cannot watch the pseudo-terminal");
        s->master = -1;
        kill(-pid, SIGHUP);
        ptyd_session_free(s);
        return NULL;
    }
    return s;
}

int ptyd_session_resize(struct ptyd_session *s, int cols, int rows)
{
    struct winsize ws = {.ws_row = (unsigned short)rows,
                         .ws_col = (unsigned short)cols};

    if (ioctl(s->master, TIOCSWINSZ, &ws) != 0)
        return -1;
    s->cols = cols;
    s->rows = rows;
    return 0;
}

static const struct {
    const char *name;
    int sig;
} signals[] = {
    {"SIGHUP", SIGHUP},       {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT},
    {"SIGILL", SIGILL},       {"SIGTRAP", SIGTRAP}, {"SIGABRT", SIGABRT},
    {"SIGBUS", SIGBUS},       {"SIGFPE", SIGFPE},   {"SIGKILL", SIGKILL},
    {"SIGUSR1", SIGUSR1},     {"SIGSEGV", SIGSEGV}, {"SIGUSR2", SIGUSR2},
    {"SIGPIPE", SIGPIPE},     {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM},
    {"SIGCHLD", SIGCHLD},     {"SIGCONT", SIGCONT}, {"SIGSTOP", SIGSTOP},
    {"SIGTSTP", SIGTSTP},     {"SIGTTIN", SIGTTIN}, {"SIGTTOU", SIGTTOU},
    {"SIGURG", SIGURG},       {"SIGXCPU", SIGXCPU}, {"SIGXFSZ", SIGXFSZ},
    {"SIGVTALRM", SIGVTALRM}, {"SIGPROF", SIGPROF}, {"SIGWINCH", SIGWINCH},
    {"SIGIO", SIGIO},         {"SIGSYS", SIGSYS},
};

int ptyd_signal_number(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
        if (strcmp(signals[i].name, name) == 0)
            return signals[i].sig;
    return -1;
}

int ptyd_session_signal(struct ptyd_session *s, int sig, char *err,
                        size_t errlen)
{
    pid_t pg = s->dead ? -1 : tcgetpgrp(s->master);

    if (pg <= 0) {
        snprintf(err, errlen, "session %s has no foreground process group",
                 s->name);
        return -1;
    }
    if (killpg(pg, sig) != 0) {
        snprintf(err, errlen, "session %s has no foreground process group (%s)",
                 s->name, strerror(errno));
        return -1;
    }
    return 0;
}

/* Ends the shell; the session is freed once its pty wsi and client are gone. */
void ptyd_session_close(struct ptyd_session *s)
{
    if (!s->dead && s->pid > 0) {
        kill(-s->pid, SIGHUP);
        kill(s->pid, SIGHUP);
    }
    s->dead = 1;
    if (s->ws != NULL) {
        s->close_code = 4000;
        lws_callback_on_writable(s->ws);
    }
    if (s->pty_wsi != NULL)
        lws_set_timeout(s->pty_wsi, PENDING_TIMEOUT_KILLED_BY_PARENT,
                        LWS_TO_KILL_ASYNC);
    /* Renamed out of the way at once so the next connect makes a fresh shell. */
    s->name[0] = '\0';
}

void ptyd_session_free(struct ptyd_session *s)
{
    struct ptyd_session **pp;

    for (pp = &sessions; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (s->pid > 0)
        waitpid(s->pid, NULL, WNOHANG);
    free(s->out.data);
    free(s->in.data);
    free(s);
}

static void maybe_free(struct ptyd_session *s)
{
    if (s->dead && s->pty_wsi == NULL && s->ws == NULL)
        ptyd_session_free(s);
}

/* Liveness, pings, idle TTL; once a second. */
void ptyd_housekeeping(void)
{
    struct ptyd_session *s = sessions;
    time_t now = time(NULL);

    while (s != NULL) {
        struct ptyd_session *next = s->next;

        if (s->ws != NULL && s->close_code == 0) {
            if (now - s->last_rx >= ptyd_cfg.ping_timeout) {
                s->close_code = 4001;
                lws_callback_on_writable(s->ws);
            } else if (now - s->last_ping >= ptyd_cfg.ping_interval) {
                s->want_ping = 1;
                s->last_ping = now;
                lws_callback_on_writable(s->ws);
            }
        }
        if (s->ws == NULL && !s->dead &&
            now - s->detached_at >= ptyd_cfg.idle_ttl)
            ptyd_session_close(s);
        else
            maybe_free(s);
        s = next;
    }
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* Resume reading the terminal once the client caught up. */
void ptyd_session_kick_pty(struct ptyd_session *s)
{
    if (s->pty_flow_off && s->out.len < PTYD_OUT_HIGH / 2 &&
        s->pty_wsi != NULL) {
        s->pty_flow_off = 0;
        lws_rx_flow_control(s->pty_wsi, 1);
    }
    if (s->in.len > 0 && s->pty_wsi != NULL)
        lws_callback_on_writable(s->pty_wsi);
}

static void pty_readable(struct ptyd_session *s)
{
    char buf[16384];
    ssize_t n = read(s->master, buf, sizeof(buf));

    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        /* EIO: the shell and everything on the terminal are gone. */
        ptyd_session_close(s);
        return;
    }
    if (ptyd_buf_append(&s->out, buf, (size_t)n) != 0)
        return;
    if (s->ws == NULL) {
        ptyd_buf_keep_tail(&s->out, PTYD_BACKLOG);
        return;
    }
    if (s->out.len > PTYD_OUT_HIGH) {
        s->pty_flow_off = 1;
        lws_rx_flow_control(s->pty_wsi, 0);
    }
    lws_callback_on_writable(s->ws);
}

static int pty_writable(struct ptyd_session *s)
{
    ssize_t n;

    if (s->in.len == 0)
        return 0;
    n = write(s->master, s->in.data, s->in.len);
    if (n < 0 && errno != EAGAIN && errno != EINTR)
        return 0;
    if (n > 0)
        ptyd_buf_consume(&s->in, (size_t)n);
    if (s->in.len > 0)
        lws_callback_on_writable(s->pty_wsi);
    else if (s->ws != NULL)
        lws_rx_flow_control(s->ws, 1);
    return 0;
}

static int pty_callback(struct lws *wsi, enum lws_callback_reasons reason,
                        void *user, void *in, size_t len)
{
    struct ptyd_session *s = lws_get_opaque_user_data(wsi);

    (void)user;
    (void)in;
    (void)len;
    if (s == NULL)
        return 0;
    switch (reason) {
    case LWS_CALLBACK_RAW_RX_FILE:
        pty_readable(s);
        break;
    case LWS_CALLBACK_RAW_WRITEABLE_FILE:
        return pty_writable(s);
    case LWS_CALLBACK_RAW_CLOSE_FILE:
        s->pty_wsi = NULL;
        s->master = -1;
        if (!s->dead)
            ptyd_session_close(s);
        maybe_free(s);
        break;
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols pty_protocol = {
    "ptyd-pty", pty_callback, 0, 0, 0, NULL, 0};
const struct lws_protocols *ptyd_pty_protocol = &pty_protocol;
