/*
 * test_log.c - stderr logging that waits at most a short grace: whole
 * lines on a stream socket that takes part of one, a grace for a reader
 * that is merely behind, a stopped terminal, and the poll() fallback when
 * stderr cannot be reopened non-blocking. Each case points fd 2 at its own
 * file; an alarm turns a blocked write into a failure.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int saved_stderr = -1;

static int setup(void **state)
{
    (void)state;
    saved_stderr = dup(STDERR_FILENO);
    log_set_level(RLMCP_LOG_INFO);
    alarm(20); /* a write that blocks fails the test instead of hanging */
    return saved_stderr < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    alarm(0);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    log_test_set_reopen_path(NULL);
    /* Owed notes go to the test's own stderr, so no case starts dropping. */
    log_msg(RLMCP_LOG_INFO, NULL, "test_log: case done");
    return 0;
}

/* Everything readable on fd now, appended to buf (NUL-terminated). */
static size_t drain(int fd, char *buf, size_t cap, size_t have)
{
    ssize_t n = 0;

    for (;;) {
        n = read(fd, buf + have, cap - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    buf[have] = '\0';
    return have;
}

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/* Every line of text is a whole log line: it starts with the prefix and a
 * message line ends with its marker. */
static void assert_whole_lines(char *text)
{
    char *save = NULL;
    char *line = NULL;
    int lines = 0;

    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        assert_true(strncmp(line, "runloop-mcp: ", 13) == 0);
        assert_null(strstr(line + 1, "runloop-mcp: "));
        if (strstr(line, "warning: ") == NULL) {
            size_t len = strlen(line);
            assert_true(len > 4);
            assert_string_equal(line + len - 4, "<end");
        }
        lines++;
    }
    assert_true(lines > 0);
}

/* A stream socket with little room takes part of a long line; the next line
 * must never be glued onto the half line. */
static void t_stream_socket_whole_lines(void **state)
{
    int sv[2] = {-1, -1};
    int small =
        1; /* the least the kernel allows: a long line takes two sends */
    char body[3500];
    char *text = NULL;
    size_t have = 0;
    uint64_t dropped0 = log_dropped_lines();
    int i;

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    set_nonblock(sv[1]);
    assert_int_equal(dup2(sv[0], STDERR_FILENO), STDERR_FILENO);
    memset(body, 'x', sizeof(body) - 1);
    body[sizeof(body) - 1] = '\0';
    text = malloc(1 << 20);
    assert_non_null(text);
    /* Fill, read a little, fill again: partial sends happen on the way. */
    for (i = 0; i < 40; i++) {
        log_msg(RLMCP_LOG_INFO, NULL, "line %d %s<end", i, body);
        if (i % 8 == 7)
            have = drain(sv[1], text, 1 << 20, have);
    }
    assert_true(log_dropped_lines() > dropped0);
    have = drain(sv[1], text, 1 << 20, have);
    log_msg(RLMCP_LOG_INFO, NULL, "last %s<end", "line");
    have = drain(sv[1], text, 1 << 20, have);
    assert_non_null(strstr(text, "log line(s) dropped"));
    assert_whole_lines(text);
    free(text);
    close(sv[0]);
    close(sv[1]);
}

struct slow_reader {
    int fd;
    pid_t logger;
    char buf[1 << 16];
};

/* True while thread tid sits in poll(): the logger waiting for room. */
static bool in_poll(pid_t tid)
{
    char path[64];
    char buf[64] = "";
    long nr = -1;
    FILE *f = NULL;

    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
    f = fopen(path, "r");
    if (f == NULL)
        return false;
    if (fgets(buf, sizeof(buf), f) != NULL)
        nr = strtol(buf, NULL, 10);
    fclose(f);
    return nr == SYS_poll || nr == SYS_ppoll;
}

/* Reads only once the logger found the pipe full and waits: without the
 * grace the line is gone by then. */
static void *read_later(void *arg)
{
    struct slow_reader *r = arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000};
    int i;

    for (i = 0; i < 20000 && !in_poll(r->logger); i++)
        nanosleep(&ts, NULL);
    drain(r->fd, r->buf, sizeof(r->buf), 0);
    return NULL;
}

/* A full one-page pipe whose reader reads a moment later: the line waits
 * for it instead of being dropped at once. The grace is lengthened so a
 * stalled machine cannot fail the test; without a grace the line is
 * dropped before the reader starts. */
static void t_grace_for_slow_reader(void **state)
{
    int p[2] = {-1, -1};
    char page[4096];
    struct slow_reader *r = NULL;
    pthread_t th;
    uint64_t dropped0 = 0;

    (void)state;
    assert_int_equal(pipe(p), 0);
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    set_nonblock(p[0]);
    set_nonblock(p[1]);
    memset(page, 'p', sizeof(page));
    while (write(p[1], page, sizeof(page)) > 0)
        ;
    while (write(p[1], page, 1) > 0)
        ;
    assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
    r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->fd = p[0];
    r->logger = (pid_t)syscall(SYS_gettid);
    dropped0 = log_dropped_lines();
    log_set_grace_ms(10000);
    assert_int_equal(pthread_create(&th, NULL, read_later, r), 0);
    log_msg(RLMCP_LOG_INFO, NULL, "burst line <end");
    pthread_join(th, NULL);
    log_set_grace_ms(50);
    assert_int_equal(log_dropped_lines(), dropped0);
    free(r);
    close(p[0]);
    close(p[1]);
}

/* A terminal stopped with Ctrl-S (output flow off) does not stall logging. */
static void t_stopped_terminal(void **state)
{
    int master = -1;
    int slave = -1;
    uint64_t dropped0 = log_dropped_lines();
    int i;

    (void)state;
    master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0) {
        skip();
        return;
    }
    assert_int_equal(grantpt(master), 0);
    assert_int_equal(unlockpt(master), 0);
    slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    assert_true(slave >= 0);
    assert_int_equal(tcflow(slave, TCOOFF), 0);
    assert_int_equal(dup2(slave, STDERR_FILENO), STDERR_FILENO);
    for (i = 0; i < 20; i++)
        log_msg(RLMCP_LOG_INFO, NULL, "tty line %d <end", i);
    assert_true(log_dropped_lines() > dropped0);
    tcflow(slave, TCOON);
    close(slave);
    close(master);
}

/* Where stderr cannot be reopened, a full pipe nobody reads is written only
 * when poll() says there is room; a warning says so once. */
static void t_poll_fallback(void **state)
{
    int p[2] = {-1, -1};
    char page[4096];
    char *text = NULL;
    uint64_t dropped0 = 0;
    struct timespec t0;
    struct timespec t1;
    double secs = 0;
    int i;

    (void)state;
    log_test_set_reopen_path("/nonexistent/stderr");
    assert_int_equal(pipe(p), 0);
    set_nonblock(p[0]);
    set_nonblock(p[1]);
    memset(page, 'p', sizeof(page));
    while (write(p[1], page, sizeof(page)) > 0)
        ;
    while (write(p[1], page, 1) > 0)
        ;
    /* fd 2 itself is blocking, as a parent's pipe usually is. */
    assert_int_equal(fcntl(p[1], F_SETFL, 0), 0);
    assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
    dropped0 = log_dropped_lines();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < 50; i++)
        log_msg(RLMCP_LOG_INFO, NULL, "full line %d <end", i);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) +
           (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 5.0);
    assert_int_equal(log_dropped_lines() - dropped0, 50);
    text = malloc(1 << 20);
    assert_non_null(text);
    drain(p[0], text, 1 << 20, 0);
    log_msg(RLMCP_LOG_INFO, NULL, "after drain <end");
    log_msg(RLMCP_LOG_INFO, NULL, "and one more <end");
    drain(p[0], text, 1 << 20, 0);
    assert_non_null(strstr(text, "cannot be reopened non-blocking"));
    assert_null(
        strstr(strstr(text, "cannot be reopened") + 1, "cannot be reopened"));
    assert_non_null(strstr(text, "50 log line(s) dropped"));
    assert_non_null(strstr(text, "after drain <end"));
    assert_non_null(strstr(text, "and one more <end"));
    free(text);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(t_stream_socket_whole_lines, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(t_grace_for_slow_reader, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(t_stopped_terminal, setup, teardown),
        cmocka_unit_test_setup_teardown(t_poll_fallback, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
