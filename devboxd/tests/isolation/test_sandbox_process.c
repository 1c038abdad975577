/* What every devbox process starts with, whatever devboxd itself runs
 * with: devboxd blocks SIGTERM/SIGINT/SIGHUP (for sigwait) and ignores
 * SIGPIPE, and may live in a 0700 checkout with a 0700 state dir.  This
 * program does the same, then checks from inside a devbox that signals
 * work (timeout, kill) and that the sandbox's helpers were found. */
#define _GNU_SOURCE
#include "sbtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T 20000 /* generous bound (ms) on a busy 2-core machine */

static struct sbt_env env;
static struct sandbox *box;
static char top[64]; /* 0700 dir holding bin/ (helpers) and the state dir */

static int copy_file(const char *src, const char *dst, mode_t mode)
{
    char buf[65536];
    int in = -1;
    int out = -1;
    ssize_t n;
    int rc = -1;

    in = open(src, O_RDONLY | O_CLOEXEC);
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (in < 0 || out < 0)
        goto out;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        if (write(out, buf, (size_t)n) != n)
            goto out;
    }
    rc = n == 0 ? 0 : -1;
out:
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* Copies devboxd-agent and devboxd-ptyd (built next to this test) into
 * <top>/bin, a 0700 directory, as 0700 files (a build under umask 077):
 * the devbox's own ids run them all the same. */
static int stage_helpers(char *agent, size_t len)
{
    static const char *const names[] = {"devboxd-agent", "devboxd-ptyd"};
    char exe[PATH_MAX];
    char src[PATH_MAX + 64];
    char dst[PATH_MAX];
    ssize_t n;
    size_t i;

    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(dst, sizeof(dst), "%s/bin", top);
    if (mkdir(dst, 0700) != 0)
        return -1;
    for (i = 0; i < 2; i++) {
        snprintf(src, sizeof(src), "%s/%s", exe, names[i]);
        snprintf(dst, sizeof(dst), "%s/bin/%s", top, names[i]);
        if (copy_file(src, dst, 0700) != 0) {
            fprintf(stderr, "cannot copy %s to %s\n", src, dst);
            return -1;
        }
    }
    snprintf(agent, len, "%s/bin/devboxd-agent", top);
    return 0;
}

static int setup(void **state)
{
    struct sb_runtime rt;
    char agent[PATH_MAX];
    char err[512] = "";
    sigset_t set;

    (void)state;
    /* As devboxd's main does before any thread or sandbox exists. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    snprintf(top, sizeof(top), "/tmp/sbproc-XXXXXX");
    if (mkdtemp(top) == NULL || chmod(top, 0700) != 0)
        return -1;
    if (stage_helpers(agent, sizeof(agent)) != 0)
        return -1;
    snprintf(env.state, sizeof(env.state), "%s/state", top);
    if (mkdir(env.state, 0700) != 0)
        return -1;
    memset(&rt, 0, sizeof(rt));
    rt.state_dir = env.state;
    rt.agent_path = agent;
    rt.cgroup_name = "devboxd-test";
    if (sandbox_init(&rt, err, sizeof(err)) != 0) {
        fprintf(stderr, "sandbox_init: %s\n", err);
        return -1;
    }
    box = sbt_start(&env, "proc", NULL, SB_NET_NONE);
    return box != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    if (box != NULL)
        sbt_destroy(&env, box, "proc");
    box = NULL;
    sbt_teardown(&env);
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", top);
    if (top[0] != '\0' && system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", top);
    return 0;
}

/* A devbox boots from a 0700 checkout and state dir, PTY server included. */
static void test_boots_from_private_dirs(void **state)
{
    char *out = NULL;
    int st;

    (void)state;
    st = sbt_run(box, NULL, "echo ok; test -x /run/devbox/ptyd && echo ptyd",
                 &out, T);
    assert_int_equal(st, 0);
    assert_string_equal(out, "ok\nptyd\n");
    free(out);
}

static void test_no_signal_blocked_or_ignored(void **state)
{
    char *out = NULL;
    int st;

    (void)state;
    st = sbt_run(box, NULL, "grep -E '^Sig(Blk|Ign)' /proc/self/status", &out,
                 T);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "SigBlk:\t0000000000000000\n"));
    assert_non_null(strstr(out, "SigIgn:\t0000000000000000\n"));
    free(out);
}

/* With SIGTERM blocked, timeout(1) would wait the full 600 s and the
 * bounded run would fail. */
static void test_timeout_ends_command(void **state)
{
    char *out = NULL;
    int st;

    (void)state;
    st = sbt_run(box, NULL, "timeout 1 sleep 600; echo rc=$?", &out, T);
    assert_int_equal(st, 0);
    assert_string_equal(out, "rc=124\n");
    free(out);
}

static bool file_has(int fd, const char *needle)
{
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

    if (n <= 0)
        return false;
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static void wait_for_output(int fd, const char *needle)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
    int i;

    for (i = 0; i < T / 20 && !file_has(fd, needle); i++)
        nanosleep(&ts, NULL);
    assert_true(file_has(fd, needle));
}

/* SIGTERM through the API (what the REST interrupt sends) ends a command
 * that does not handle it: exit status 128 + 15. */
static void test_kill_term_ends_command(void **state)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char err[512] = "";
    char path[] = "/tmp/sbproc-out-XXXXXX";
    int status = -1;
    int fd;

    (void)state;
    fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    memset(&req, 0, sizeof(req));
    req.command = "echo up; exec sleep 600";
    req.stdout_fd = fd;
    req.stderr_fd = -1;
    assert_int_equal(sandbox_exec(box, &req, &p, err, sizeof(err)), 0);
    wait_for_output(fd, "up\n");
    assert_int_equal(sandbox_exec_kill(p, SIGTERM), 0);
    assert_int_equal(sandbox_exec_wait(p, T, &status), 0);
    assert_int_equal(status, 128 + SIGTERM);
    sandbox_exec_free(p);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boots_from_private_dirs),
        cmocka_unit_test(test_no_signal_blocked_or_ignored),
        cmocka_unit_test(test_timeout_ends_command),
        cmocka_unit_test(test_kill_term_ends_command),
    };

    if (geteuid() != 0) {
        fprintf(stderr, "test_sandbox_process needs root\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
