/* Unit tests: what devboxd's helpers (the image builder among them) inherit
 * from sandbox_spawn.  devboxd holds many descriptors; a child that got
 * them would open its own pipes above 9, where dash cannot redirect
 * (mmdebstrap's hooks failed with "Bad fd number"). */
#define _GNU_SOURCE
#include "sandbox.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define HELD 24

/* Lists the descriptors from 3 to 63 the shell holds, then "end". */
static char *const list_fds[] = {
    "/bin/sh", "-c",
    "n=3; while [ $n -lt 64 ]; do [ -e /proc/$$/fd/$n ] && printf '%s ' $n; "
    "n=$((n+1)); done; echo end",
    NULL};

static int held[HELD];

static int hold_fds(void **state)
{
    int i;

    (void)state;
    /* Inheritable, as a descriptor devboxd was started with would be. */
    for (i = 0; i < HELD; i++) {
        held[i] = open("/dev/null", O_RDONLY);
        if (held[i] < 0)
            return -1;
    }
    return 0;
}

static int release_fds(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < HELD; i++)
        close(held[i]);
    return 0;
}

static void test_child_gets_only_0_to_2(void **state)
{
    posix_spawn_file_actions_t fa;
    char out[512];
    int pp[2];
    pid_t pid;
    int status;

    (void)state;
    assert_true(held[HELD - 1] > 12);
    assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
    assert_int_equal(sandbox_spawn(&pid, list_fds[0], &fa, list_fds), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[1]);
    status = sandbox_collect(pid, pp[0], out, sizeof(out));
    close(pp[0]);
    assert_int_equal(status, 0);
    assert_string_equal(out, "end");
}

static void test_child_without_file_actions(void **state)
{
    char *const argv[] = {"/bin/sh", "-c",
                          "[ ! -e /proc/$$/fd/3 ] && [ ! -e /proc/$$/fd/12 ]",
                          NULL};
    pid_t pid;
    int status = -1;

    (void)state;
    assert_int_equal(sandbox_spawn(&pid, argv[0], NULL, argv), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_child_gets_only_0_to_2),
        cmocka_unit_test(test_child_without_file_actions),
    };

    return cmocka_run_group_tests(tests, hold_fds, release_fds);
}
