/*
 * log.c - stderr logging, one write per line, waiting at most a short grace:
 * a client that never reads our stderr pipe must not stall the calls that
 * log.
 */
#define _GNU_SOURCE
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const level_names[] = {
    "debug", "info",     "notice", "warning",
    "error", "critical", "alert",  "emergency",
};
#define N_LEVELS (sizeof(level_names) / sizeof(level_names[0]))

static int current_level = RLMCP_LOG_INFO;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static log_sink_fn sink_fn;
static void *sink_user;

/* How lines reach stderr: chosen again whenever fd 2 becomes another file
 * (a test or a daemon may dup2 over it). Under sink_lock. */
enum out_kind { OUT_BLOCKING, OUT_NONBLOCK_FD, OUT_SOCKET, OUT_POLL };
static enum out_kind out_kind = OUT_BLOCKING;
static int out_fd = STDERR_FILENO;
static dev_t out_dev;
static ino_t out_ino;
static bool out_known;
/* The unwritten rest of a line a stream socket or terminal took in part. */
static char out_tail[PIPE_BUF];
static size_t out_tail_len;
/* Reopened from here; tests point it at a path that cannot be opened. */
static const char *reopen_path = "/proc/self/fd/2";
/* The warning that stderr is written by poll-then-write, said once. */
static bool poll_noted;
static bool poll_note_pending;
static int poll_note_errno;
/* Lines lost to a full stderr: all of them, and those not yet reported. */
static uint64_t dropped_total;
static uint64_t dropped_unreported; /* under sink_lock */

void log_set_level(int level)
{
    __atomic_store_n(&current_level, level, __ATOMIC_RELAXED);
}

int log_get_level(void)
{
    return __atomic_load_n(&current_level, __ATOMIC_RELAXED);
}

int log_level_parse(const char *name)
{
    size_t i;

    if (name == NULL)
        return -1;
    for (i = 0; i < N_LEVELS; i++) {
        if (strcasecmp(name, level_names[i]) == 0)
            return (int)i;
    }
    if (strcasecmp(name, "warn") == 0)
        return RLMCP_LOG_WARNING;
    return -1;
}

const char *log_level_name(int level)
{
    if (level < 0 || (size_t)level >= N_LEVELS)
        return "unknown";
    return level_names[level];
}

void log_set_sink(log_sink_fn fn, void *user)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_user = user;
    pthread_mutex_unlock(&sink_lock);
}

/* Control characters would let a message forge extra log lines. */
static void flatten(char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            *s = ' ';
    }
}

/*
 * A pipe or terminal gets a file description of its own opened
 * non-blocking, so that O_NONBLOCK never reaches the description we share
 * with the parent (a shell's terminal, a client's pipe). A socket is
 * written with MSG_DONTWAIT. When the reopen fails (no /proc, EACCES) the
 * shared descriptor is written after poll(POLLOUT) says there is room,
 * which is as close to non-blocking as a shared blocking descriptor gets.
 * A regular file is written as is: it does not fill.
 */
static void out_check(void)
{
    struct stat st;
    int fd = -1;

    if (fstat(STDERR_FILENO, &st) != 0)
        return;
    if (out_known && st.st_dev == out_dev && st.st_ino == out_ino)
        return;
    if (out_fd != STDERR_FILENO)
        close(out_fd);
    out_fd = STDERR_FILENO;
    out_kind = OUT_BLOCKING;
    out_dev = st.st_dev;
    out_ino = st.st_ino;
    out_known = true;
    out_tail_len = 0; /* a half line of the old file stays there */
    if (S_ISSOCK(st.st_mode)) {
        out_kind = OUT_SOCKET;
        return;
    }
    if (S_ISREG(st.st_mode))
        return;
    fd = open(reopen_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0) {
        out_fd = fd;
        out_kind = OUT_NONBLOCK_FD;
        return;
    }
    out_kind = OUT_POLL;
    if (!poll_noted) {
        poll_noted = true;
        poll_note_errno = errno;
        poll_note_pending = true;
    }
}

/* Room on the output within wait_ms: poll() on the descriptor we write. */
static bool out_room(int wait_ms)
{
    struct pollfd pfd = {.fd = out_fd, .events = POLLOUT};
    int rc = -1;

    do {
        rc = poll(&pfd, 1, wait_ms);
    } while (rc < 0 && errno == EINTR);
    return rc > 0 && (pfd.revents & POLLOUT) != 0;
}

/*
 * Write buf now without blocking. Returns the bytes written, 0 when none;
 * a stream socket or a terminal may take part of it. OUT_POLL writes the
 * shared blocking descriptor only when poll() says it will not block.
 */
static size_t out_some(const char *buf, size_t len)
{
    ssize_t n = -1;

    if (out_kind == OUT_POLL && !out_room(0))
        return 0;
    do {
        if (out_kind == OUT_SOCKET)
            n = send(STDERR_FILENO, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        else
            n = write(out_fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return n > 0 ? (size_t)n : 0;
}

/*
 * One whole line: true when it is written, or its start is and the rest
 * is kept as the tail, which goes out before anything else so that the
 * next line is never glued onto half a line. False when none of it went
 * out (a tail still pending counts as none).
 */
static bool out_write(const char *buf, size_t len)
{
    size_t n = 0;

    if (out_tail_len > 0) {
        n = out_some(out_tail, out_tail_len);
        if (n > 0 && n < out_tail_len)
            memmove(out_tail, out_tail + n, out_tail_len - n);
        out_tail_len -= n;
        if (out_tail_len > 0)
            return false;
    }
    n = out_some(buf, len);
    if (n == 0)
        return false;
    if (n < len) {
        memcpy(out_tail, buf + n, len - n);
        out_tail_len = len - n;
    }
    return true;
}

/* How long a line may wait for a slow reader before it is dropped: once,
 * and not while lines are being dropped already. Tests lengthen it
 * (log_set_grace_ms) so that a stalled machine cannot decide them. */
#define OUT_GRACE_MS 50
static int out_grace_ms = OUT_GRACE_MS;

void log_set_grace_ms(int ms)
{
    __atomic_store_n(&out_grace_ms, ms, __ATOMIC_RELAXED);
}

/* Under sink_lock: the line, after the notes owed before it. */
static void out_line(char *out, size_t len)
{
    char note[200];
    int nl = 0;

    out_check();
    if (poll_note_pending) {
        nl = snprintf(note, sizeof(note),
                      "runloop-mcp: warning: stderr cannot be reopened "
                      "non-blocking (%s): each log line waits up to %d ms "
                      "for room, then is dropped\n",
                      strerror(poll_note_errno),
                      __atomic_load_n(&out_grace_ms, __ATOMIC_RELAXED));
        if (nl > 0 && (size_t)nl < sizeof(note) && out_write(note, (size_t)nl))
            poll_note_pending = false;
    }
    if (dropped_unreported > 0) {
        nl = snprintf(note, sizeof(note),
                      "runloop-mcp: warning: %llu log line(s) dropped: "
                      "stderr was full (nobody was reading it)\n",
                      (unsigned long long)dropped_unreported);
        if (nl > 0 && (size_t)nl < sizeof(note) && out_write(note, (size_t)nl))
            dropped_unreported = 0;
    }
    /* A pipe takes a write of at most PIPE_BUF whole or not at all, so a
     * full pipe never gets half a line; the tail holds at most one line. */
    if (len > PIPE_BUF) {
        len = PIPE_BUF;
        out[len - 1] = '\n';
    }
    /* A reader that is merely behind (a start-up burst into a one-page
     * pipe) gets a short grace; a reader that is gone costs it once per
     * run of dropped lines. */
    if (dropped_unreported == 0) {
        if (out_write(out, len))
            return;
        if (out_room(__atomic_load_n(&out_grace_ms, __ATOMIC_RELAXED)) &&
            out_write(out, len))
            return;
    }
    dropped_unreported++;
    __atomic_add_fetch(&dropped_total, 1, __ATOMIC_RELAXED);
}

uint64_t log_dropped_lines(void)
{
    return __atomic_load_n(&dropped_total, __ATOMIC_RELAXED);
}

void log_vmsg(int level, const char *who, const char *fmt, va_list ap)
{
    char line[4096];
    int prefix = 0;
    int n = 0;
    size_t len = 0;

    if (level < log_get_level())
        return;
    if (who != NULL && who[0] != '\0')
        prefix = snprintf(line, sizeof(line),
                          "runloop-mcp: %s: %s: ", log_level_name(level), who);
    else
        prefix = snprintf(line, sizeof(line),
                          "runloop-mcp: %s: ", log_level_name(level));
    if (prefix < 0 || (size_t)prefix >= sizeof(line))
        prefix = 0;
    n = vsnprintf(line + prefix, sizeof(line) - (size_t)prefix, fmt, ap);
    if (n < 0)
        line[prefix] = '\0';
    flatten(line + prefix);
    len = strlen(line);

    pthread_mutex_lock(&sink_lock);
    if (sink_fn != NULL) {
        sink_fn(sink_user, level, line);
    } else {
        char out[sizeof(line) + 1];
        memcpy(out, line, len);
        out[len] = '\n';
        /* One write so concurrent lines never interleave. */
        out_line(out, len + 1);
    }
    pthread_mutex_unlock(&sink_lock);
}

void log_msg(int level, const char *who, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(level, who, fmt, ap);
    va_end(ap);
}

void log_test_set_reopen_path(const char *path)
{
    pthread_mutex_lock(&sink_lock);
    reopen_path = path != NULL ? path : "/proc/self/fd/2";
    out_known = false; /* choose again on the next line */
    poll_noted = false;
    pthread_mutex_unlock(&sink_lock);
}
