/* devboxd's side of the agent protocol treats the agent as hostile: a fake
 * agent (hostile_agent.c) runs in a real sandbox and answers with garbage;
 * devboxd must neither crash, leak the fds it is sent, accept out-of-range
 * values, nor wait without bound. */
#define _GNU_SOURCE
#include "sbtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct sbt_env env;
static struct sandbox *box;

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    while (d != NULL && readdir(d) != NULL)
        n++;
    if (d != NULL)
        closedir(d);
    return n;
}

static int setup(void **state)
{
    struct sb_runtime rt;
    char exe[PATH_MAX];
    char agent[PATH_MAX + 32];
    char err[512] = "";
    ssize_t n;

    (void)state;
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(agent, sizeof(agent), "%s/hostile-agent", exe);
    snprintf(env.state, sizeof(env.state), "/tmp/sbhostile-XXXXXX");
    if (mkdtemp(env.state) == NULL)
        return -1;
    memset(&rt, 0, sizeof(rt));
    rt.state_dir = env.state;
    rt.agent_path = agent;
    rt.cgroup_name = "devboxd-test";
    if (sandbox_init(&rt, err, sizeof(err)) != 0) {
        fprintf(stderr, "sandbox_init: %s\n", err);
        return -1;
    }
    box = sbt_start(&env, "hostile", NULL, SB_NET_NONE);
    return box != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (box != NULL)
        sbt_destroy(&env, box, "hostile");
    box = NULL;
    sbt_teardown(&env);
    return 0;
}

static int run(const char *cmd, int timeout_ms, int *status)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char err[256];
    int rc;

    memset(&req, 0, sizeof(req));
    req.command = cmd;
    req.stdout_fd = req.stderr_fd = -1;
    rc = sandbox_exec(box, &req, &p, err, sizeof(err));
    if (rc != 0)
        return rc;
    rc = sandbox_exec_wait(p, timeout_ms, status);
    if (rc == 0)
        assert_true(sandbox_exec_pid(p) == 0 ||
                    sandbox_exec_pid(p) == 7); /* -5 and 1e300 rejected */
    sandbox_exec_free(p);
    return rc;
}

static void test_garbage_then_valid_exit(void **state)
{
    int before = count_fds();
    int status = -1;

    (void)state;
    assert_int_equal(run("valid", 20000, &status), 0);
    assert_int_equal(status,
                     3); /* 99999, -1, "0" and missing statuses were ignored */
    assert_int_equal(count_fds(), before); /* the 8 fds it sent were closed */
}

static void test_silent_agent_is_bounded(void **state)
{
    int status = 0;
    struct timespec a;
    struct timespec b;
    long ms;

    (void)state;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(run("never", 300, &status), -ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &b);
    ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
    assert_true(ms < 5000);
    assert_int_equal(status, -1);
}

static void test_hangup_is_reported(void **state)
{
    int status = 0;

    (void)state;
    assert_int_equal(run("eof", 20000, &status), -ESRCH);
    assert_int_equal(sandbox_check(box), 0); /* the sandbox itself is fine */
}

static void test_fake_terminal_refused(void **state)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char err[256] = "";
    int before = count_fds();

    (void)state;
    memset(&req, 0, sizeof(req));
    req.command = "bash -i";
    req.stdout_fd = req.stderr_fd = -1;
    req.want_pty = true;
    req.pty_cols = 80;
    req.pty_rows = 24;
    assert_int_not_equal(sandbox_exec(box, &req, &p, err, sizeof(err)), 0);
    assert_null(p);
    assert_non_null(strstr(err, "terminal"));
    assert_int_equal(count_fds(),
                     before); /* the /dev/null it passed was closed */
}

static void test_bad_or_missing_hello_fails_start(void **state)
{
    struct sb_spec spec;
    struct sandbox *sb = NULL;
    char err[512] = "";
    char *dir = NULL;
    const char *ids[] = {"bad-hello", "exit-at-once"};
    const char *want[] = {"unknown protocol", "exited"};
    size_t i;

    int before = count_fds();

    (void)state;
    for (i = 0; i < 2; i++) {
        dir = sbt_devbox_dir(&env, ids[i]);
        memset(&spec, 0, sizeof(spec));
        spec.id = ids[i];
        spec.dir = dir;
        spec.image = sbt_image();
        spec.net = SB_NET_NONE;
        assert_int_not_equal(sandbox_start(&spec, &sb, err, sizeof(err)), 0);
        assert_null(sb);
        assert_non_null(strstr(err, want[i]));
        assert_int_equal(sandbox_destroy_dir(dir, err, sizeof(err)), 0);
        free(dir);
    }
    assert_int_equal(count_fds(),
                     before); /* failed starts leak no descriptor */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_garbage_then_valid_exit),
        cmocka_unit_test(test_silent_agent_is_bounded),
        cmocka_unit_test(test_hangup_is_reported),
        cmocka_unit_test(test_fake_terminal_refused),
        cmocka_unit_test(test_bad_or_missing_hello_fails_start),
    };

    if (geteuid() != 0) {
        fprintf(stderr, "this test needs root (devboxd runs as root)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
