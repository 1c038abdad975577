/*
 * mcp_stdio.c - the MCP stdio transport: newline-delimited JSON-RPC over
 * stdin/stdout for one session.
 */
#define _GNU_SOURCE /* pipe2 */
#include "mcp_stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "intake.h"
#include "log.h"
#include "mcp.h"
#include "stdio_stateless.h"

#define READ_CHUNK (64 * 1024)
#define SHRINK_ABOVE (1024 * 1024)
/* After EOF, calls in flight may finish for this long before cancelling. */
#define EOF_GRACE_MS 10000
#define DRAIN_MS 5000

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t stop_write_fd = -1;
static int stop_read_fd = -1;

void stdio_request_stop(void)
{
    int saved = errno;
    int fd = stop_write_fd;

    stop_requested = 1;
    if (fd >= 0 && write(fd, "x", 1) < 0) {
        /* Full pipe: a wake-up is already pending. */
    }
    errno = saved;
}

struct stdio_out {
    struct mcp_sink sink; /* first: the sink pointer is the struct's */
    /*
     * The transport holds one reference, each call one more: a call's last
     * use of its sink comes after it left the in-flight count, so that
     * count cannot tell when the sink may go.
     */
    atomic_int refs;
    pthread_mutex_t lock;
    int fd;
    bool broken;
};

/* Write all of iov, waiting when the descriptor is non-blocking. */
static int write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);

        if (w < 0) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};

            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return -1;
            poll(&p, 1, -1);
            continue;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

static void out_send(struct mcp_sink *sink, const char *json, size_t len,
                     bool final)
{
    struct stdio_out *o = (struct stdio_out *)sink;
    struct iovec iov[2];

    if (json == NULL)
        return; /* "no response will come": nothing to write on stdio */
    iov[0].iov_base = (void *)json;
    iov[0].iov_len = len;
    iov[1].iov_base = (void *)"\n";
    iov[1].iov_len = 1;
    pthread_mutex_lock(&o->lock);
    if (!o->broken && write_all(o->fd, iov, 2) != 0) {
        o->broken = true;
        log_msg(RLMCP_LOG_WARNING, NULL,
                "stdout closed (%s); answers are dropped", strerror(errno));
    }
    pthread_mutex_unlock(&o->lock);
}

static void out_retain(struct mcp_sink *sink)
{
    struct stdio_out *o = (struct stdio_out *)sink;

    atomic_fetch_add(&o->refs, 1);
}

static void out_release(struct mcp_sink *sink)
{
    struct stdio_out *o = (struct stdio_out *)sink;

    if (atomic_fetch_sub(&o->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&o->lock);
    free(o);
}

struct reader {
    struct mcp_dispatcher *d;
    struct mcp_session *s;
    struct stdio_out *out;
    struct stdio_stateless *sl; /* 2026-07-28 requests */
    char *buf;
    size_t len; /* bytes held: the start of an unfinished line */
    size_t cap;
    size_t max;      /* message limit */
    bool discarding; /* inside an oversized line: drop until '\n' */
};

static void handle_line(struct reader *r, char *line, size_t len)
{
    struct mcp_request_ctx ctx = {.api_key = NULL};

    if (len > 0 && line[len - 1] == '\r')
        len--;
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return;
    if (stdio_stateless_handle(r->sl, line, len, &r->out->sink,
                               mcp_session_initialized(r->s)))
        return;
    stdio_stateless_notify(r->sl, line, len);
    mcp_handle(r->d, r->s, line, len, &r->out->sink, &ctx);
}

/* Answer an over-limit message with an error (id null: never parsed). */
static void reject_oversized(struct reader *r)
{
    char msg[256];
    char *json = NULL;

    snprintf(msg, sizeof(msg),
             "message exceeds the %zu-byte limit and was discarded; send "
             "smaller messages (for big data use files in the devbox)",
             r->max);
    log_msg(RLMCP_LOG_WARNING, NULL, "%s", msg);
    json = intake_refusal(INTAKE_REFUSE_INVALID, NULL, msg);
    if (json != NULL)
        out_send(&r->out->sink, json, strlen(json), true);
    free(json);
}

/* Make room for one more read; the buffer never exceeds max + a chunk. */
static int reserve(struct reader *r)
{
    size_t want = r->len + READ_CHUNK;
    char *grown = NULL;

    if (want <= r->cap)
        return 0;
    if (want < r->cap * 2)
        want = r->cap * 2;
    if (want > r->max + READ_CHUNK + 1)
        want = r->max + READ_CHUNK + 1;
    grown = realloc(r->buf, want);
    if (grown == NULL)
        return -1;
    r->buf = grown;
    r->cap = want;
    return 0;
}

/* Give back a big buffer once the big message is gone (idle RSS). */
static void maybe_shrink(struct reader *r)
{
    char *smaller = NULL;

    if (r->cap <= SHRINK_ABOVE || r->len > READ_CHUNK)
        return;
    smaller = realloc(r->buf, READ_CHUNK * 2);
    if (smaller != NULL) {
        r->buf = smaller;
        r->cap = READ_CHUNK * 2;
    }
}

/* Split the bytes after `from` into lines and handle each. */
static void consume(struct reader *r, size_t from)
{
    size_t start = 0;
    char *nl = NULL;
    char *p = r->buf + from;
    char *end = r->buf + r->len;

    while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        size_t line_len = (size_t)(nl - (r->buf + start));

        if (r->discarding)
            r->discarding = false; /* the oversized line ends here */
        else if (line_len > r->max)
            reject_oversized(r); /* it arrived whole in one read */
        else
            handle_line(r, r->buf + start, line_len);
        start = (size_t)(nl + 1 - r->buf);
        p = nl + 1;
    }
    if (r->discarding) {
        r->len = 0;
        return;
    }
    if (start > 0) {
        memmove(r->buf, r->buf + start, r->len - start);
        r->len -= start;
        maybe_shrink(r);
    }
    if (r->len > r->max) {
        /* Too long already: answer now, drop the rest of the line. */
        reject_oversized(r);
        r->discarding = true;
        r->len = 0;
    }
}

static int open_stop_pipe(void)
{
    int fds[2];

    if (stop_read_fd >= 0)
        return 0;
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    stop_read_fd = fds[0];
    stop_write_fd = fds[1];
    return 0;
}

/* Read until EOF, a stop request or an error: 1, 0, -1. */
static int read_loop(struct reader *r, int in_fd)
{
    struct pollfd pfd[2];
    ssize_t n;

    pfd[0].fd = in_fd;
    pfd[0].events = POLLIN;
    pfd[1].fd = stop_read_fd;
    pfd[1].events = POLLIN;
    for (;;) {
        if (stop_requested)
            return 0;
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (pfd[1].revents != 0)
            return 0;
        if (reserve(r) != 0) {
            log_msg(RLMCP_LOG_ERROR, NULL, "stdio: out of memory");
            return -1;
        }
        n = read(in_fd, r->buf + r->len, r->cap - r->len - 1);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            log_msg(RLMCP_LOG_ERROR, NULL, "stdin: %s", strerror(errno));
            return -1;
        }
        if (n == 0) {
            /* A last message without its newline still counts. */
            if (!r->discarding && r->len > r->max)
                reject_oversized(r);
            else if (!r->discarding && r->len > 0)
                handle_line(r, r->buf, r->len);
            return 1;
        }
        r->len += (size_t)n;
        consume(r, r->len - (size_t)n);
    }
}

/* After EOF: let calls finish (a piped batch wants its answers). */
static void eof_grace(struct mcp_dispatcher *d)
{
    struct pollfd pfd = {.fd = stop_read_fd, .events = POLLIN};
    int waited = 0;

    while (mcp_inflight(d) > 0 && waited < EOF_GRACE_MS && !stop_requested) {
        if (poll(&pfd, 1, 20) > 0)
            break;
        waited += 20;
    }
}

static void ignore_sigpipe(void)
{
    struct sigaction old;
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sa.sa_handler = SIG_IGN;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
    }
}

int stdio_serve_fds(struct mcp_dispatcher *d, int in_fd, int out_fd)
{
    struct stdio_out *out = calloc(1, sizeof(*out));
    struct reader r;
    bool broken;
    int rc;

    memset(&r, 0, sizeof(r));
    if (out == NULL)
        return -1;
    out->sink.send = out_send;
    out->sink.retain = out_retain;
    out->sink.release = out_release;
    atomic_init(&out->refs, 1);
    out->fd = out_fd;
    pthread_mutex_init(&out->lock, NULL);
    ignore_sigpipe();
    r.d = d;
    r.out = out;
    r.max = mcp_max_message(d);
    r.s = mcp_session_new(d);
    r.sl = stdio_stateless_new(d);
    if (r.s == NULL || r.sl == NULL || open_stop_pipe() != 0) {
        log_msg(RLMCP_LOG_ERROR, NULL, "stdio: cannot start: %s",
                strerror(errno));
        rc = -1;
        goto out;
    }
    mcp_session_set_notify(r.s, &out->sink);
    rc = read_loop(&r, in_fd);
    log_msg(RLMCP_LOG_DEBUG, NULL, "stdio: %s; %u call(s) in flight",
            rc == 1   ? "end of input"
            : rc == 0 ? "stop requested"
                      : "read error",
            mcp_inflight(d));
    if (rc == 1)
        eof_grace(d);
    rc = rc < 0 ? -1 : 0;
    /* Cancel what is left; answers still go out while stdout is open. */
    mcp_drain(d, DRAIN_MS);
out:
    mcp_session_free(r.s);
    stdio_stateless_free(r.sl);
    free(r.buf);
    pthread_mutex_lock(&out->lock);
    broken = out->broken;
    pthread_mutex_unlock(&out->lock);
    /* A call that ignored cancellation may still write: it keeps out. */
    out_release(&out->sink);
    return broken ? -1 : rc;
}

int stdio_serve(struct mcp_dispatcher *d)
{
    return stdio_serve_fds(d, STDIN_FILENO, STDOUT_FILENO);
}
