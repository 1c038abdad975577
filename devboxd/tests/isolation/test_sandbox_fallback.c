/* The rlimit fallback when cgroup controllers are missing: the runtime is
 * pointed at an empty cgroup root, so memory and pids limits must come from
 * RLIMIT_AS and RLIMIT_NPROC (per devbox host uid). */
#define _GNU_SOURCE
#include "sbtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T 30000

static struct sbt_env env;
static char fake_cg[64];
static struct sandbox *box;

static int setup(void **state)
{
    struct sb_runtime rt;
    struct sb_limits lim = {.memory_bytes = 256ULL << 20, .pids_max = 40};
    char err[512] = "";

    (void)state;
    snprintf(env.state, sizeof(env.state), "/tmp/sbfallback-XXXXXX");
    snprintf(fake_cg, sizeof(fake_cg), "/tmp/sbfallback-cg-XXXXXX");
    if (mkdtemp(env.state) == NULL || mkdtemp(fake_cg) == NULL)
        return -1;
    memset(&rt, 0, sizeof(rt));
    rt.state_dir = env.state;
    rt.cgroup_root = fake_cg; /* no controllers below it */
    if (sandbox_init(&rt, err, sizeof(err)) != 0) {
        fprintf(stderr, "sandbox_init: %s\n", err);
        return -1;
    }
    box = sbt_start(&env, "fallback", &lim, SB_NET_NONE);
    return box != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (box != NULL)
        sbt_destroy(&env, box, "fallback");
    sbt_teardown(&env);
    rmdir(fake_cg);
    return 0;
}

static void test_limits_are_rlimits(void **state)
{
    char *out = NULL;

    (void)state;
    assert_int_equal(sbt_run(box, NULL, "ulimit -v; ulimit -u", &out, T), 0);
    assert_string_equal(out, "262144\n48\n");
    free(out);
}

static void test_memory_bomb_fails_inside(void **state)
{
    char *out = NULL;
    int st;

    (void)state;
    st = sbt_run(box, NULL,
                 "python3 -c 'a=[]\nwhile True: a.append(bytearray(8<<20))' "
                 "2>&1 | tail -1",
                 &out, T);
    assert_int_equal(st,
                     0); /* tail's status; python itself died of MemoryError */
    assert_non_null(strstr(out, "MemoryError"));
    free(out);
}

static void test_fork_bomb_is_bounded(void **state)
{
    char *out = NULL;
    int refused;

    (void)state;
    /* Forks until refused, then reaps what it made. */
    sbt_run(box, NULL,
            "python3 - <<'EOF'\n"
            "import os, signal, time\n"
            "kids = []\n"
            "try:\n"
            "    while len(kids) < 500:\n"
            "        pid = os.fork()\n"
            "        if pid == 0:\n"
            "            time.sleep(30); os._exit(0)\n"
            "        kids.append(pid)\n"
            "except OSError:\n"
            "    pass\n"
            "print('refused-at', len(kids))\n"
            "for k in kids: os.kill(k, signal.SIGKILL)\n"
            "for k in kids: os.waitpid(k, 0)\n"
            "EOF",
            &out, T);
    assert_non_null(out);
    assert_non_null(strstr(out, "refused-at "));
    refused = atoi(strstr(out, "refused-at ") + 11);
    assert_true(refused > 5 && refused < 48);
    free(out);
    out = NULL;
    /* The sandbox keeps serving once they are gone. */
    assert_int_equal(sbt_run(box, NULL, "echo alive", &out, T), 0);
    assert_non_null(strstr(out, "alive"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_are_rlimits),
        cmocka_unit_test(test_memory_bomb_fails_inside),
        cmocka_unit_test(test_fork_bomb_is_bounded),
    };

#ifdef SBTEST_SANITIZED
    fprintf(stderr,
            "skipped: a sanitized agent cannot start under RLIMIT_AS\n");
    return 77;
#endif
    if (geteuid() != 0) {
        fprintf(stderr, "this test needs root (devboxd runs as root)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
